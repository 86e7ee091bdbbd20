# Cross-compiling for 64-bit ARM Linux with Debian's cross toolchain
# (g++-aarch64-linux-gnu) against arm64 multiarch libraries
# (/usr/lib/aarch64-linux-gnu: apt-get install <package>:arm64), and running
# the results under qemu-user (`installer/deps.sh --arm64` installs all
# three). CMakePresets.json's arm64 preset uses this file.
#
# The emulator gets `-cpu max`, which has every extension the kernels
# choose between (Advanced SIMD, dotprod, I8MM); `KVSCOPE_SIMD` then forces
# each path in turn (kernels/cpu/simd_path.h). Programs load the multiarch
# C library (libc6:arm64, /lib/ld-linux-aarch64.so.1), not the cross
# toolchain's copy (`-L /usr/aarch64-linux-gnu`): under Debian 12's qemu 7.2
# that copy hangs in the first pthread_create.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64;-cpu;max)
