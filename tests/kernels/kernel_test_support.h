// Shared by the kernel tests: running a check on every SIMD path the
// machine has, and f16 rounding and decoding from binary16's definition in
// double arithmetic (exact at these magnitudes): an implementation
// independent of the kernels' bit manipulation and of F16C. (Not the
// compiler's _Float16: clang 14, which the sanitizer builds use, has none on
// x86-64.)
#pragma once

#include <QTest>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "kernels/cpu/simd_path.h"

namespace kernel_test {

using kvscope::kernels::cpu::SimdPath;

// Scalar always; then each path this build and CPU have (AVX2, or the
// NEON paths from plain to I8MM).
inline std::vector<SimdPath> available_paths() {
    const auto paths = kvscope::kernels::cpu::available_simd_paths();
    return {paths.begin(), paths.end()};
}

// Selects a path for the scope of a test, restoring the best one after.
class PathScope {
public:
    explicit PathScope(SimdPath path) { kvscope::kernels::cpu::set_simd_path(path); }
    ~PathScope() { kvscope::kernels::cpu::set_simd_path(kvscope::kernels::cpu::best_simd_path()); }
    PathScope(const PathScope&) = delete;
    PathScope& operator=(const PathScope&) = delete;
};

constexpr double kF16Max = 65504.0;
constexpr double kF16MinNormal = 0x1p-14;

// The f16 nearest to `value` (ties to even, beyond the largest: infinity).
inline float f16_round(float value) {
    if (!std::isfinite(value))
        return value;
    const double a = std::fabs(static_cast<double>(value));
    int e = 0;
    std::frexp(a, &e); // a = m * 2^e, m in [0.5, 1)
    const double spacing = std::ldexp(1.0, std::max(e - 1, -14) - 10); // of f16 values around a
    const double rounded = std::nearbyint(a / spacing) * spacing;     // default mode: ties to even
    const float magnitude = rounded > kF16Max ? std::numeric_limits<float>::infinity() : static_cast<float>(rounded);
    return std::copysign(magnitude, value);
}

// The binary16 bits of f16_round(value); NaN as the quiet NaN 0x7e00.
inline std::uint16_t f16_bits(float value) {
    const float r = f16_round(value);
    const auto sign = static_cast<std::uint16_t>(std::signbit(r) ? 0x8000 : 0);
    if (std::isnan(r))
        return sign | 0x7e00;
    if (std::isinf(r))
        return sign | 0x7c00;
    const double a = std::fabs(static_cast<double>(r));
    if (a < kF16MinNormal) // subnormal: a whole number of 2^-24
        return static_cast<std::uint16_t>(sign | static_cast<std::uint16_t>(a * 0x1p24));
    int e = 0;
    const double m = std::frexp(a, &e); // (1 + fraction/1024) * 2^(exponent - 15) = 2m * 2^(e - 1)
    return static_cast<std::uint16_t>(sign | ((e - 1 + 15) << 10) | static_cast<int>((m * 2 - 1) * 1024));
}

// The value of binary16 bits.
inline float f16_value(std::uint16_t bits) {
    const int exponent = (bits >> 10) & 0x1f;
    const int fraction = bits & 0x3ff;
    double magnitude = std::ldexp(fraction, -24); // subnormal
    if (exponent == 31)
        magnitude = fraction != 0 ? std::numeric_limits<double>::quiet_NaN() : std::numeric_limits<double>::infinity();
    else if (exponent > 0)
        magnitude = std::ldexp(1024 + fraction, exponent - 25);
    return static_cast<float>((bits & 0x8000) != 0 ? -magnitude : magnitude);
}

} // namespace kernel_test
