#include "kernels/cpu/simd_path.h"

#include <atomic>
#include <stdexcept>

#include "kernels/cpu/cpu_features.h"

namespace kvscope::kernels::cpu {
namespace {

SimdPath detect() {
#if defined(KVSCOPE_KERNELS_AVX2)
    const CpuFeatures& cpu = cpu_features();
    if (cpu.avx2 && cpu.fma && cpu.f16c)
        return SimdPath::Avx2;
#endif
    return SimdPath::Scalar;
}

std::atomic<SimdPath>& current() {
    static std::atomic<SimdPath> path{best_simd_path()};
    return path;
}

} // namespace

SimdPath best_simd_path() {
    static const SimdPath best = detect();
    return best;
}

SimdPath simd_path() { return current().load(std::memory_order_relaxed); }

void set_simd_path(SimdPath path) {
    if (path == SimdPath::Avx2 && best_simd_path() != SimdPath::Avx2)
        throw std::invalid_argument("the AVX2 kernels need an x86-64 build and a CPU with "
                                    "AVX2, FMA and F16C");
    current().store(path, std::memory_order_relaxed);
}

const char* to_string(SimdPath path) { return path == SimdPath::Avx2 ? "avx2" : "scalar"; }

} // namespace kvscope::kernels::cpu
