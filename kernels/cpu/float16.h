// Conversions from the 16-bit float formats found in model files (IEEE
// binary16 "f16" and bfloat16) to float. Bit-exact for every input,
// including subnormals, infinities and NaN, on any C++20 compiler.
#pragma once

#include <bit>
#include <cstdint>

// Internal linkage (the unnamed namespace): these are compiled into the
// SIMD files too, and a shared inline copy could hand the portable path an
// instruction its CPU lacks.
namespace kvscope::kernels::cpu {
namespace {

// The definition, and what CPUs without a scalar f16 conversion run.
inline float f16_to_f32_portable(std::uint16_t h) {
    const std::uint32_t sign = (h & 0x8000u) << 16;
    const std::uint32_t exponent = (h >> 10) & 0x1Fu;
    const std::uint32_t mantissa = h & 0x3FFu;
    if (exponent == 0x1F) // infinity or NaN: keep the payload
        return std::bit_cast<float>(sign | 0x7F800000u | (mantissa << 13));
    if (exponent != 0) // normal: rebias 15 -> 127
        return std::bit_cast<float>(sign | ((exponent + 112) << 23) | (mantissa << 13));
    // Zero or subnormal: mantissa * 2^-24 is exact in float.
    const float magnitude = static_cast<float>(mantissa) * 0x1p-24f;
    return sign != 0 ? -magnitude : magnitude;
}

inline float f16_to_f32(std::uint16_t h) {
#if defined(__aarch64__)
    // Every AArch64 CPU converts in one FCVT, exactly (subnormals too).
    // FCVT would quieten a signalling NaN: NaNs keep the portable payload.
    if ((h & 0x7C00u) != 0x7C00u)
        return static_cast<float>(std::bit_cast<__fp16>(h));
#endif
    return f16_to_f32_portable(h);
}

// bfloat16 is the top half of a float.
inline float bf16_to_f32(std::uint16_t h) {
    return std::bit_cast<float>(static_cast<std::uint32_t>(h) << 16);
}

} // namespace
} // namespace kvscope::kernels::cpu
