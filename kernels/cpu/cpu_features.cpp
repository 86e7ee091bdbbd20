#include "kernels/cpu/cpu_features.h"

#include <cstddef>
#include <cstdint>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#elif defined(__aarch64__) && defined(__linux__)
#include <sys/auxv.h>
#elif defined(__aarch64__) && defined(__APPLE__)
#include <sys/sysctl.h>
#endif

namespace kvscope::kernels::cpu {
namespace {

#if defined(__x86_64__) || defined(__i386__)

struct Regs {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
};

// CPUID leaf/subleaf, or all zero when the CPU has no such leaf
// (__get_cpuid_count checks the highest leaf first).
Regs cpuid(unsigned leaf, unsigned subleaf) {
    Regs r;
    if (__get_cpuid_count(leaf, subleaf, &r.eax, &r.ebx, &r.ecx, &r.edx) == 0)
        return {};
    return r;
}

bool bit(unsigned reg, int n) { return ((reg >> n) & 1u) != 0; }

// XCR0: which register states the OS saves. Read with the raw instruction,
// so that this file needs no -mxsave.
std::uint64_t enabled_register_states() {
    unsigned lo = 0, hi = 0;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return (std::uint64_t{hi} << 32) | lo;
}

CpuFeatures detect() {
    const Regs l1 = cpuid(1, 0);
    if (!bit(l1.ecx, 27)) // OSXSAVE: without it XGETBV faults and no AVX state is saved
        return {};
    const std::uint64_t xcr0 = enabled_register_states();
    const bool ymm = (xcr0 & 0x6) == 0x6;   // SSE and AVX state
    const bool zmm = (xcr0 & 0xe6) == 0xe6; // and opmask, upper ZMM halves, ZMM16-31
    const Regs l7 = cpuid(7, 0);
    const Regs l7s1 = cpuid(7, 1);
    CpuFeatures f;
    f.avx2 = ymm && bit(l7.ebx, 5);
    f.fma = ymm && bit(l1.ecx, 12);
    f.f16c = ymm && bit(l1.ecx, 29);
    f.avx_vnni = ymm && bit(l7s1.eax, 4);
    const bool avx512_fbwdqvl = bit(l7.ebx, 16) && bit(l7.ebx, 30) && bit(l7.ebx, 17) && bit(l7.ebx, 31);
    f.avx512_vnni = zmm && avx512_fbwdqvl && bit(l7.ecx, 11);
    return f;
}

#elif defined(__aarch64__) && defined(__linux__)

// The bits Linux's <asm/hwcap.h> gives them (stable kernel ABI), spelled
// out so that an older libc's headers need not know I8MM.
constexpr unsigned long kHwcapAsimd = 1ul << 1;
constexpr unsigned long kHwcapAsimdDp = 1ul << 20;
constexpr unsigned long kHwcap2I8mm = 1ul << 13;

CpuFeatures detect() {
    const unsigned long hwcap = getauxval(AT_HWCAP);
    const unsigned long hwcap2 = getauxval(AT_HWCAP2);
    CpuFeatures f;
    f.neon = (hwcap & kHwcapAsimd) != 0;
    f.dotprod = (hwcap & kHwcapAsimdDp) != 0;
    f.i8mm = (hwcap2 & kHwcap2I8mm) != 0;
    return f;
}

#elif defined(__aarch64__) && defined(__APPLE__)

// A hw.optional.arm.FEAT_* flag: 1 when present; absent (older macOS) is 0.
bool sysctl_flag(const char* name) {
    int value = 0;
    std::size_t size = sizeof value;
    return sysctlbyname(name, &value, &size, nullptr, 0) == 0 && value != 0;
}

CpuFeatures detect() {
    CpuFeatures f;
    f.neon = true; // every Apple arm64 CPU
    f.dotprod = sysctl_flag("hw.optional.arm.FEAT_DotProd");
    f.i8mm = sysctl_flag("hw.optional.arm.FEAT_I8MM");
    return f;
}

#else

CpuFeatures detect() { return {}; }

#endif

} // namespace

const CpuFeatures& cpu_features() {
    static const CpuFeatures features = detect();
    return features;
}

} // namespace kvscope::kernels::cpu
