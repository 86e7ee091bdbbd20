// The x86 instruction-set extensions the kernels choose between at run
// time, read once from CPUID. A feature counts only when the OS also saves
// its registers on a context switch (XGETBV), as the compilers' own
// __builtin_cpu_supports does; that builtin is not used because clang 14
// (Debian 12's, the one libFuzzer needs) rejects "f16c" and "avxvnni".
// On other architectures every feature is false.
#pragma once

namespace kvscope::kernels::cpu {

struct CpuFeatures {
    bool avx2 = false;
    bool fma = false;
    bool f16c = false;
    bool avx_vnni = false;    // the VEX-encoded 256-bit dpbusd (Alder Lake, Zen 5)
    bool avx512_vnni = false; // with AVX-512 F, BW, DQ and VL, which its kernels use too
};

// Detected on first call; the same answer for the life of the process.
const CpuFeatures& cpu_features();

} // namespace kvscope::kernels::cpu
