// The instruction-set extensions the kernels choose between at run time,
// read once. This file is the one place that asks the OS or the CPU:
//   x86-64   CPUID; a feature counts only when the OS also saves its
//            registers on a context switch (XGETBV), as the compilers' own
//            __builtin_cpu_supports does; that builtin is not used because
//            clang 14 (Debian 12's, the one libFuzzer needs) rejects
//            "f16c" and "avxvnni".
//   AArch64  Linux: getauxval(AT_HWCAP / AT_HWCAP2), the kernel's view of
//            the ID registers; macOS: sysctlbyname("hw.optional.arm.FEAT_*").
//            Advanced SIMD is part of every AArch64 CPU.
// Features of the other architecture are false.
#pragma once

namespace kvscope::kernels::cpu {

struct CpuFeatures {
    bool avx2 = false;
    bool fma = false;
    bool f16c = false;
    bool avx_vnni = false;    // the VEX-encoded 256-bit dpbusd (Alder Lake, Zen 5)
    bool avx512_vnni = false; // with AVX-512 F, BW, DQ and VL, which its kernels use too

    bool neon = false;    // AArch64 Advanced SIMD, with the f16 <-> f32 conversions
    bool dotprod = false; // SDOT/UDOT (FEAT_DotProd, Armv8.2)
    bool i8mm = false;    // SMMLA/UMMLA/USDOT (FEAT_I8MM, Armv8.6)
};

// Detected on first call; the same answer for the life of the process.
const CpuFeatures& cpu_features();

} // namespace kvscope::kernels::cpu
