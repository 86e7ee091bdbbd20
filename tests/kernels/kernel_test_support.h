// Shared by the kernel tests: running a check on every SIMD path the
// machine has, and f16 rounding done by the compiler's _Float16 (an
// implementation independent of the kernels').
#pragma once

#include <QTest>

#include <cstdint>
#include <cstring>
#include <vector>

#include "kernels/cpu/simd_path.h"

namespace kernel_test {

using kvscope::kernels::cpu::SimdPath;

// Scalar always; AVX2 too when this build and CPU have it.
inline std::vector<SimdPath> available_paths() {
    std::vector<SimdPath> paths{SimdPath::Scalar};
    if (kvscope::kernels::cpu::best_simd_path() == SimdPath::Avx2)
        paths.push_back(SimdPath::Avx2);
    return paths;
}

// Selects a path for the scope of a test, restoring the best one after.
class PathScope {
public:
    explicit PathScope(SimdPath path) { kvscope::kernels::cpu::set_simd_path(path); }
    ~PathScope() { kvscope::kernels::cpu::set_simd_path(kvscope::kernels::cpu::best_simd_path()); }
    PathScope(const PathScope&) = delete;
    PathScope& operator=(const PathScope&) = delete;
};

inline std::uint16_t f16_bits(float value) {
    const auto h = static_cast<_Float16>(value);
    std::uint16_t bits;
    std::memcpy(&bits, &h, 2);
    return bits;
}

inline float f16_round(float value) { return static_cast<float>(static_cast<_Float16>(value)); }

} // namespace kernel_test
