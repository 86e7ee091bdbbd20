// Internal to the KV kernels: how one value of each KV storage format is
// encoded and decoded, one value at a time. The writers (kv_write.cpp)
// quantize with these; the portable readers (kv_row_ops.cpp) decode with
// them; the AVX2 readers decode 8 at a time the same way and fall back to
// them for a row's last head_dim % 8 values.
//
// Row and scale layouts are KvLayout's (engine/kv/kv_layout.h):
//   int4   value i in byte i / 2, low nibble first
//   int2   value i in byte i / 4, lowest two bits first
//   groups (f16 scale, f16 zero) per kKvGroup values: x = code * scale + zero
//   KIVI K per channel: head_dim f16 scales, then head_dim f16 zeros
//   int8   one f16 scale per row: x = code * scale
//   fp8    e4m3 (bias 7, no infinities, 0x7F/0xFF NaN) times a per-head f32
#pragma once

#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "kernels/cpu/float16.h"
#include "kernels/cpu/float16_encode.h"

// The functions have internal linkage (the unnamed namespace): they are
// compiled into the SIMD files too, and a shared inline copy could hand the
// portable path an instruction its CPU lacks.
namespace kvscope::kernels::cpu::detail {

constexpr std::size_t kKvGroup = 32; // values per int4/int2 group along head_dim

// The per-row decodings the attention kernels tell apart: K and V of one
// KvElem may differ (KIVI keys are per channel, its values per token).
enum class RowCode : std::uint8_t { F32, F16, BF16, Fp8, Int8, Int4Groups, Int2Groups, Int4Channels, Int2Channels };

namespace {

inline float f16_at(const std::byte* p, std::size_t i) {
    std::uint16_t bits;
    std::memcpy(&bits, p + 2 * i, 2);
    return f16_to_f32(bits);
}

inline void put_f16(std::byte* p, std::size_t i, float value) {
    const std::uint16_t bits = f32_to_f16(value);
    std::memcpy(p + 2 * i, &bits, 2);
}

// f16 rounding of a scale or zero point: the writer quantizes against the
// value the reader will see.
inline float round_to_f16(float value) { return f16_to_f32(f32_to_f16(value)); }

inline unsigned nibble(const std::byte* row, std::size_t i) {
    return (std::to_integer<unsigned>(row[i / 2]) >> (4 * (i % 2))) & 0xFu;
}

inline unsigned crumb(const std::byte* row, std::size_t i) {
    return (std::to_integer<unsigned>(row[i / 4]) >> (2 * (i % 4))) & 0x3u;
}

// e4m3 -> float: for a normal code the 7 magnitude bits shifted into a
// float's exponent and mantissa, exponent rebiased 7 -> 127 by an integer
// add; a subnormal code (exponent 0) is m * 2^-9. Exact, no table, and no
// float subnormal is ever formed (those cost microcode assists on x86).
inline float decode_e4m3(std::uint8_t code) {
    const std::uint32_t mantissa = code & 0x7u;
    const float magnitude = (code & 0x78u) == 0
                                ? static_cast<float>(mantissa) * 0x1p-9f
                                : std::bit_cast<float>((static_cast<std::uint32_t>(code & 0x7Fu) << 20) + (120u << 23));
    return (code & 0x80u) ? -magnitude : magnitude;
}

// float -> e4m3, round to nearest even, saturating at +-448 (e4m3 has no
// infinity; vLLM's fp8 cache saturates too). NaN stays NaN.
inline std::uint8_t encode_e4m3(float value) {
    const std::uint8_t sign = std::signbit(value) ? 0x80u : 0u;
    const float a = std::fabs(value);
    if (std::isnan(a))
        return 0x7Fu;
    if (a >= 448.0f)
        return sign | 0x7Eu;
    if (a < 0x1p-6f) // subnormal: multiples of 2^-9; 8 * 2^-9 is the smallest normal, code 0x08
        return sign | static_cast<std::uint8_t>(std::nearbyint(a * 0x1p9f));
    const std::uint32_t bits = std::bit_cast<std::uint32_t>(a);
    const std::uint32_t rounded = bits + 0x7FFFFu + ((bits >> 20) & 1u); // keep 3 mantissa bits, ties to even
    return sign | static_cast<std::uint8_t>((rounded >> 20) - (120u << 3));
}

// Value i of a row (n = head_dim values) with its scales.
template <RowCode Code>
float decode_value(const std::byte* row, const std::byte* scales, std::size_t i, std::size_t n) {
    if constexpr (Code == RowCode::F32) {
        float v;
        std::memcpy(&v, row + 4 * i, 4);
        return v;
    } else if constexpr (Code == RowCode::F16) {
        return f16_at(row, i);
    } else if constexpr (Code == RowCode::BF16) {
        std::uint16_t bits;
        std::memcpy(&bits, row + 2 * i, 2);
        return bf16_to_f32(bits);
    } else if constexpr (Code == RowCode::Fp8) {
        float scale;
        std::memcpy(&scale, scales, 4);
        return decode_e4m3(std::to_integer<std::uint8_t>(row[i])) * scale;
    } else if constexpr (Code == RowCode::Int8) {
        return static_cast<float>(static_cast<std::int8_t>(std::to_integer<std::uint8_t>(row[i]))) * f16_at(scales, 0);
    } else if constexpr (Code == RowCode::Int4Groups) {
        const std::size_t g = i / kKvGroup;
        return static_cast<float>(nibble(row, i)) * f16_at(scales, 2 * g) + f16_at(scales, 2 * g + 1);
    } else if constexpr (Code == RowCode::Int2Groups) {
        const std::size_t g = i / kKvGroup;
        return static_cast<float>(crumb(row, i)) * f16_at(scales, 2 * g) + f16_at(scales, 2 * g + 1);
    } else if constexpr (Code == RowCode::Int4Channels) {
        return static_cast<float>(nibble(row, i)) * f16_at(scales, i) + f16_at(scales, n + i);
    } else {
        static_assert(Code == RowCode::Int2Channels);
        return static_cast<float>(crumb(row, i)) * f16_at(scales, i) + f16_at(scales, n + i);
    }
}

} // namespace
} // namespace kvscope::kernels::cpu::detail
