// Which instruction set the kernels use, chosen at run time. Every kernel
// has a portable scalar version; x86-64 builds add AVX2+FMA+F16C versions
// and AArch64 builds NEON versions, compiled into their own files, used
// only when the CPU has what they need.
//
// The AArch64 paths are nested: each adds one extension to the one before,
// and a kernel with no version for an extension runs its predecessor's.
// They are separate paths (unlike the x86 VNNI variants, which the AVX2
// path picks by itself) so that tests and `KVSCOPE_SIMD` can force each in
// turn on a CPU that has them all (qemu's `-cpu max`).
#pragma once

#include <span>

namespace kvscope::kernels::cpu {

enum class SimdPath {
    Scalar,   // portable C++, any CPU
    Avx2,     // x86-64: AVX2 + FMA + F16C (AVX-VNNI, AVX-512 VNNI within it where present)
    Neon,     // AArch64 Advanced SIMD with its f16 conversions (every arm64 CPU)
    NeonDot,  // + SDOT/UDOT (Armv8.2 dotprod: Apple M1+, Graviton 2+)
    NeonI8mm, // + SMMLA/USDOT (Armv8.6 I8MM: Apple M2+, Graviton 3+)
};

// Whether a path is one of the AArch64 ones, and whether it includes the
// dot-product extension.
constexpr bool is_neon(SimdPath path) {
    return path == SimdPath::Neon || path == SimdPath::NeonDot || path == SimdPath::NeonI8mm;
}
constexpr bool has_neon_dot(SimdPath path) { return path == SimdPath::NeonDot || path == SimdPath::NeonI8mm; }

// The best path this build and CPU support.
SimdPath best_simd_path();

// Every path this build and CPU can run, Scalar first, best last.
std::span<const SimdPath> available_simd_paths();

// Whether this build has the path's kernels and this CPU can run them.
bool simd_path_available(SimdPath path);

// The path in use: the one the environment variable KVSCOPE_SIMD names
// (scalar, avx2, neon, neon-dotprod, neon-i8mm) if set, else
// best_simd_path(), until set_simd_path chooses another. Throws
// std::invalid_argument, naming the variable and the paths this CPU has,
// when KVSCOPE_SIMD names no path or one this build or CPU cannot run.
SimdPath simd_path();

// Selects a path (tests and benchmarks compare them). Throws
// std::invalid_argument for a path the build or CPU cannot run. Not meant
// to be called while kernels run on other threads.
void set_simd_path(SimdPath path);

const char* to_string(SimdPath path);

} // namespace kvscope::kernels::cpu
