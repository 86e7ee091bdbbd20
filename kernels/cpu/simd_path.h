// Which instruction set the kernels use, chosen at run time. Every kernel
// has a portable scalar version; x86-64 builds add AVX2+FMA+F16C versions
// compiled into their own files, used only when the CPU has all three.
#pragma once

namespace kvscope::kernels::cpu {

enum class SimdPath {
    Scalar, // portable C++, any CPU
    Avx2,   // AVX2 + FMA + F16C
};

// The best path this build and CPU support.
SimdPath best_simd_path();

// The path in use: best_simd_path() unless set_simd_path chose another.
SimdPath simd_path();

// Selects a path (tests and benchmarks compare them). Throws
// std::invalid_argument for a path the build or CPU cannot run. Not meant
// to be called while kernels run on other threads.
void set_simd_path(SimdPath path);

const char* to_string(SimdPath path);

} // namespace kvscope::kernels::cpu
