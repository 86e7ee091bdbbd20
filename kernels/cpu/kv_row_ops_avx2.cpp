// AVX2 + FMA + F16C KV row operations (compiled with those flags, called
// only after the run-time CPU check in simd_path.cpp). Each format decodes
// 8 values into a vector of floats in registers and feeds them straight to
// the FMA: F16C converts halves, int4/int2 codes come out of one broadcast
// word with per-lane variable shifts, fp8 is a shift, an integer add and a
// blend (e4m3x8). Scales are loaded once per group of 32 values. The last
// head_dim % 8 values go through the portable decoder.
#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "kernels/cpu/avx2_hsum.h"
#include "kernels/cpu/kv_row_ops.h"

namespace kvscope::kernels::cpu::detail {
namespace {

float f16_scalar(const std::byte* p, std::size_t i) {
    std::uint16_t bits;
    std::memcpy(&bits, p + 2 * i, 2);
    return _cvtsh_ss(bits);
}

__m256 f16x8(const std::byte* p, std::size_t i) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 2 * i)));
}

// Codes i..i+7 (i a multiple of 8) of a packed int4 or int2 row, as floats.
__m256 int4x8(const std::byte* row, std::size_t i) {
    std::uint32_t word;
    std::memcpy(&word, row + i / 2, 4);
    const __m256i shifts = _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28);
    const __m256i codes = _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32(static_cast<int>(word)), shifts),
                                           _mm256_set1_epi32(0xF));
    return _mm256_cvtepi32_ps(codes);
}

__m256 int2x8(const std::byte* row, std::size_t i) {
    std::uint16_t word;
    std::memcpy(&word, row + i / 4, 2);
    const __m256i shifts = _mm256_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14);
    const __m256i codes = _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32(word), shifts), _mm256_set1_epi32(0x3));
    return _mm256_cvtepi32_ps(codes);
}

// What a row's values share within one group of kKvGroup values, loaded
// once per group rather than per 8 values: the row's (int8) or head's
// (fp8) scale, or the group's (scale, zero) pair.
struct Affine {
    __m256 scale, zero;
};

template <RowCode Code>
Affine affine(const std::byte* scales, std::size_t group) {
    if constexpr (Code == RowCode::Fp8) {
        float scale;
        std::memcpy(&scale, scales, 4);
        return {_mm256_set1_ps(scale), _mm256_setzero_ps()};
    } else if constexpr (Code == RowCode::Int8) {
        return {_mm256_set1_ps(f16_scalar(scales, 0)), _mm256_setzero_ps()};
    } else if constexpr (Code == RowCode::Int4Groups || Code == RowCode::Int2Groups) {
        return {_mm256_set1_ps(f16_scalar(scales, 2 * group)), _mm256_set1_ps(f16_scalar(scales, 2 * group + 1))};
    } else {
        (void)scales, (void)group;
        return {_mm256_setzero_ps(), _mm256_setzero_ps()};
    }
}

// e4m3 codes -> floats. Normal codes: the 7 magnitude bits shifted into a
// float's exponent and mantissa, exponent rebiased by an integer add
// (7 -> 127). Subnormal codes (exponent 0): m * 2^-9, computed as
// (1 + m/8) * 2^-6 - 2^-6 so that no float subnormal (and no slow
// microcode assist) is ever formed.
__m256 e4m3x8(const std::byte* row, std::size_t i) {
    const __m256i b = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(row + i)));
    const __m256i magnitude = _mm256_slli_epi32(_mm256_and_si256(b, _mm256_set1_epi32(0x7F)), 20);
    const __m256 normal = _mm256_castsi256_ps(_mm256_add_epi32(magnitude, _mm256_set1_epi32(120 << 23)));
    const __m256 subnormal = _mm256_sub_ps(_mm256_castsi256_ps(_mm256_or_si256(magnitude, _mm256_set1_epi32(121 << 23))),
                                           _mm256_set1_ps(0x1p-6f));
    const __m256i is_subnormal = _mm256_cmpeq_epi32(_mm256_and_si256(b, _mm256_set1_epi32(0x78)), _mm256_setzero_si256());
    const __m256 value = _mm256_blendv_ps(normal, subnormal, _mm256_castsi256_ps(is_subnormal));
    const __m256i sign = _mm256_slli_epi32(_mm256_and_si256(b, _mm256_set1_epi32(0x80)), 24);
    return _mm256_or_ps(value, _mm256_castsi256_ps(sign));
}

// code * scale + zero with each channel's own pair.
__m256 per_channel(__m256 codes, const std::byte* scales, std::size_t i, std::size_t n) {
    return _mm256_fmadd_ps(codes, f16x8(scales, i), f16x8(scales, n + i));
}

template <RowCode Code>
__m256 decode8(const std::byte* row, const std::byte* scales, std::size_t i, std::size_t n, const Affine& a) {
    if constexpr (Code == RowCode::F32) {
        return _mm256_loadu_ps(reinterpret_cast<const float*>(row) + i);
    } else if constexpr (Code == RowCode::F16) {
        return f16x8(row, i);
    } else if constexpr (Code == RowCode::BF16) {
        const __m256i wide = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row + 2 * i)));
        return _mm256_castsi256_ps(_mm256_slli_epi32(wide, 16));
    } else if constexpr (Code == RowCode::Fp8) {
        return _mm256_mul_ps(e4m3x8(row, i), a.scale);
    } else if constexpr (Code == RowCode::Int8) {
        const __m256i codes = _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(row + i)));
        return _mm256_mul_ps(_mm256_cvtepi32_ps(codes), a.scale);
    } else if constexpr (Code == RowCode::Int4Groups) {
        return _mm256_fmadd_ps(int4x8(row, i), a.scale, a.zero);
    } else if constexpr (Code == RowCode::Int2Groups) {
        return _mm256_fmadd_ps(int2x8(row, i), a.scale, a.zero);
    } else if constexpr (Code == RowCode::Int4Channels) {
        return per_channel(int4x8(row, i), scales, i, n);
    } else {
        static_assert(Code == RowCode::Int2Channels);
        return per_channel(int2x8(row, i), scales, i, n);
    }
}

// Both walk a row group by group (kKvGroup values, a multiple of 8), 8
// values at a time, each 8 decoded once for all H heads; the last n % 8
// values go through the portable decoder.
template <RowCode Code, std::size_t H>
void dot(const float* q, const std::byte* row, const std::byte* scales, std::size_t n, float* out) {
    __m256 acc[H][2];
    for (std::size_t h = 0; h < H; ++h)
        acc[h][0] = acc[h][1] = _mm256_setzero_ps();
    const std::size_t whole = n / 8 * 8;
    for (std::size_t first = 0; first < whole; first += kKvGroup) {
        const Affine shared = affine<Code>(scales, first / kKvGroup);
        const std::size_t end = std::min(whole, first + kKvGroup);
        for (std::size_t i = first; i < end; i += 8) {
            const __m256 v = decode8<Code>(row, scales, i, n, shared);
            for (std::size_t h = 0; h < H; ++h)
                acc[h][(i / 8) & 1] = _mm256_fmadd_ps(_mm256_loadu_ps(q + h * n + i), v, acc[h][(i / 8) & 1]);
        }
    }
    for (std::size_t h = 0; h < H; ++h)
        out[h] = hsum(_mm256_add_ps(acc[h][0], acc[h][1]));
    for (std::size_t i = whole; i < n; ++i) {
        const float x = decode_value<Code>(row, scales, i, n);
        for (std::size_t h = 0; h < H; ++h)
            out[h] += q[h * n + i] * x;
    }
}

template <RowCode Code, std::size_t H>
void axpy(const float* a, const std::byte* row, const std::byte* scales, float* acc, std::size_t n) {
    __m256 a8[H];
    for (std::size_t h = 0; h < H; ++h)
        a8[h] = _mm256_set1_ps(a[h]);
    const std::size_t whole = n / 8 * 8;
    for (std::size_t first = 0; first < whole; first += kKvGroup) {
        const Affine shared = affine<Code>(scales, first / kKvGroup);
        const std::size_t end = std::min(whole, first + kKvGroup);
        for (std::size_t i = first; i < end; i += 8) {
            const __m256 v = decode8<Code>(row, scales, i, n, shared);
            for (std::size_t h = 0; h < H; ++h)
                _mm256_storeu_ps(acc + h * n + i, _mm256_fmadd_ps(a8[h], v, _mm256_loadu_ps(acc + h * n + i)));
        }
    }
    for (std::size_t i = whole; i < n; ++i) {
        const float x = decode_value<Code>(row, scales, i, n);
        for (std::size_t h = 0; h < H; ++h)
            acc[h * n + i] += a[h] * x;
    }
}

template <RowCode Code, std::size_t... H>
constexpr KvRowOps ops(std::index_sequence<H...>) {
    return {{dot<Code, H + 1>...}, {axpy<Code, H + 1>...}};
}

template <RowCode Code>
constexpr KvRowOps ops() {
    return ops<Code>(std::make_index_sequence<kSharedHeads>());
}

} // namespace

KvRowOps avx2_kv_row_ops(RowCode code) {
    switch (code) {
    case RowCode::F32: return ops<RowCode::F32>();
    case RowCode::F16: return ops<RowCode::F16>();
    case RowCode::BF16: return ops<RowCode::BF16>();
    case RowCode::Fp8: return ops<RowCode::Fp8>();
    case RowCode::Int8: return ops<RowCode::Int8>();
    case RowCode::Int4Groups: return ops<RowCode::Int4Groups>();
    case RowCode::Int2Groups: return ops<RowCode::Int2Groups>();
    case RowCode::Int4Channels: return ops<RowCode::Int4Channels>();
    case RowCode::Int2Channels: return ops<RowCode::Int2Channels>();
    }
    return ops<RowCode::F32>();
}

} // namespace kvscope::kernels::cpu::detail
