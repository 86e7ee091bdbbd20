// float -> IEEE binary16, rounding to nearest even, bit-identical to x86's
// F16C vcvtps2ph with _MM_FROUND_TO_NEAREST_INT (including subnormals,
// overflow to infinity and quiet NaNs), on any C++20 compiler; AArch64's
// FCVT gives the same bits. The decoding direction is float16.h.
#pragma once

#include <bit>
#include <cstdint>

// Internal linkage (the unnamed namespace): these are compiled into the
// SIMD files too, and a shared inline copy could hand the portable path an
// instruction its CPU lacks.
namespace kvscope::kernels::cpu {
namespace {

// The definition, and what CPUs without a scalar f16 conversion run.
inline std::uint16_t f32_to_f16_portable(float value) {
    const std::uint32_t bits = std::bit_cast<std::uint32_t>(value);
    const auto sign = static_cast<std::uint16_t>((bits >> 16) & 0x8000u);
    const std::uint32_t magnitude = bits & 0x7FFFFFFFu;
    if (magnitude > 0x7F800000u) // NaN: quieted, top payload bits kept (as F16C does)
        return static_cast<std::uint16_t>(sign | 0x7E00u | ((magnitude >> 13) & 0x3FFu));
    if (magnitude >= 0x477FF000u) // >= 65520, the midpoint above f16's max 65504: rounds to inf
        return static_cast<std::uint16_t>(sign | 0x7C00u);
    if (magnitude >= 0x38800000u) { // f16 normal (>= 2^-14)
        // Round the 13 dropped mantissa bits to nearest even; a carry
        // correctly bumps the exponent. Then rebias 127 -> 15.
        const std::uint32_t rounded = magnitude + 0xFFFu + ((magnitude >> 13) & 1u);
        return static_cast<std::uint16_t>(sign | ((rounded - (112u << 23)) >> 13));
    }
    // f16 subnormal or zero: adding 0.5f aligns the value so that the float
    // adder's own round-to-nearest-even keeps exactly the bits of 2^-24
    // resolution f16 subnormals have (a result of 0x400 is the smallest normal).
    const float aligned = std::bit_cast<float>(magnitude) + 0.5f;
    return static_cast<std::uint16_t>(sign | (std::bit_cast<std::uint32_t>(aligned) - 0x3F000000u));
}

inline std::uint16_t f32_to_f16(float value) {
#if defined(__aarch64__)
    // One FCVT on every AArch64 CPU: rounds to nearest even (FPCR's
    // default), NaNs quieted with the top payload bits kept, as F16C does.
    return std::bit_cast<std::uint16_t>(static_cast<__fp16>(value));
#else
    return f32_to_f16_portable(value);
#endif
}

} // namespace
} // namespace kvscope::kernels::cpu
