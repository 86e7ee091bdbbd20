# KVSCOPE_CUDA=AUTO|ON|OFF decides whether the CUDA kernels are built.
# AUTO builds them when nvcc is found. The CUDA runtime is linked statically,
# so the same binary runs on machines with no GPU or no driver: device
# detection happens at run time (engine/core/device.cpp).
set(KVSCOPE_CUDA AUTO CACHE STRING "Build the CUDA kernels: AUTO, ON or OFF")
set_property(CACHE KVSCOPE_CUDA PROPERTY STRINGS AUTO ON OFF)

set(KVSCOPE_HAVE_CUDA OFF)
if(NOT KVSCOPE_CUDA STREQUAL "OFF")
  if(NOT CMAKE_CUDA_COMPILER AND NOT DEFINED ENV{CUDACXX} AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    # One binary for every GPU from the A100 on, at two compiles of
    # kernels/cuda, unless the user names others ("native" would fail at
    # configure time on a machine without a GPU):
    #   80-real  sm_80 machine code: A100 (8.0), and A10/RTX 30xx (8.6) and
    #            L4/RTX 40xx (8.9), which run any 8.x code built for 8.0 or
    #            lower. The kernels use nothing newer than 8.0 (no FP8
    #            instructions: fp8 KV is decoded in software).
    #   90       sm_90 machine code for H100/H200 and compute_90 PTX, which
    #            the driver compiles for any newer GPU (Blackwell) at load.
    # `cuobjdump --list-elf --list-ptx` on libkvscope_cuda_kernels.a shows
    # sm_80 and sm_90 code and compute_90 PTX. Each architecture costs its
    # own compile of kernels/cuda: -DCMAKE_CUDA_ARCHITECTURES=90 builds one.
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES AND NOT DEFINED ENV{CUDAARCHS})
      set(CMAKE_CUDA_ARCHITECTURES "80-real;90" CACHE STRING "CUDA architectures to build for")
    endif()
    enable_language(CUDA)
    find_package(CUDAToolkit REQUIRED)
    # CMake 3.25 cannot pass C++20 to nvcc: kernels/cuda's headers, which
    # .cu files include, stay C++17 (no std::span); .cpp callers are C++20.
    set(CMAKE_CUDA_STANDARD 17)
    set(KVSCOPE_HAVE_CUDA ON)
  elseif(KVSCOPE_CUDA STREQUAL "ON")
    message(FATAL_ERROR "KVSCOPE_CUDA=ON but no CUDA compiler was found (set CUDACXX or CMAKE_CUDA_COMPILER)")
  endif()
endif()
message(STATUS "kvscope: CUDA kernels ${KVSCOPE_HAVE_CUDA}")
