// AVX2 + FMA + F16C KV row operations (compiled with those flags, called
// only after the run-time CPU check in simd_path.cpp). Each format decodes
// 8 values into a vector of floats in registers and feeds them straight to
// the FMA: F16C converts halves, int4/int2 codes come out of one broadcast
// word with per-lane variable shifts, fp8 is a shift and one multiply
// (kv_codes.h explains why that is exact). The last head_dim % 8 values go
// through the portable decoder.
#include <immintrin.h>

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

// code * scale + zero with the (scale, zero) pair of the group holding i.
__m256 grouped(__m256 codes, const std::byte* scales, std::size_t i) {
    const std::size_t g = i / kKvGroup;
    return _mm256_fmadd_ps(codes, _mm256_set1_ps(f16_scalar(scales, 2 * g)), _mm256_set1_ps(f16_scalar(scales, 2 * g + 1)));
}

// code * scale + zero with each channel's own pair.
__m256 per_channel(__m256 codes, const std::byte* scales, std::size_t i, std::size_t n) {
    return _mm256_fmadd_ps(codes, f16x8(scales, i), f16x8(scales, n + i));
}

template <RowCode Code>
__m256 decode8(const std::byte* row, const std::byte* scales, std::size_t i, std::size_t n) {
    if constexpr (Code == RowCode::F32) {
        return _mm256_loadu_ps(reinterpret_cast<const float*>(row) + i);
    } else if constexpr (Code == RowCode::F16) {
        return f16x8(row, i);
    } else if constexpr (Code == RowCode::BF16) {
        const __m256i wide = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row + 2 * i)));
        return _mm256_castsi256_ps(_mm256_slli_epi32(wide, 16));
    } else if constexpr (Code == RowCode::Fp8) {
        const __m256i b = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(row + i)));
        const __m256i magnitude = _mm256_slli_epi32(_mm256_and_si256(b, _mm256_set1_epi32(0x7F)), 20);
        const __m256i sign = _mm256_slli_epi32(_mm256_and_si256(b, _mm256_set1_epi32(0x80)), 24);
        const __m256 value = _mm256_mul_ps(_mm256_castsi256_ps(_mm256_or_si256(magnitude, sign)), _mm256_set1_ps(0x1p120f));
        float scale;
        std::memcpy(&scale, scales, 4);
        return _mm256_mul_ps(value, _mm256_set1_ps(scale));
    } else if constexpr (Code == RowCode::Int8) {
        const __m256i codes = _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(row + i)));
        return _mm256_mul_ps(_mm256_cvtepi32_ps(codes), _mm256_set1_ps(f16_scalar(scales, 0)));
    } else if constexpr (Code == RowCode::Int4Groups) {
        return grouped(int4x8(row, i), scales, i);
    } else if constexpr (Code == RowCode::Int2Groups) {
        return grouped(int2x8(row, i), scales, i);
    } else if constexpr (Code == RowCode::Int4Channels) {
        return per_channel(int4x8(row, i), scales, i, n);
    } else {
        static_assert(Code == RowCode::Int2Channels);
        return per_channel(int2x8(row, i), scales, i, n);
    }
}

template <RowCode Code>
float dot(const float* q, const std::byte* row, const std::byte* scales, std::size_t n) {
    __m256 acc0 = _mm256_setzero_ps();
    __m256 acc1 = _mm256_setzero_ps();
    std::size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(q + i), decode8<Code>(row, scales, i, n), acc0);
        acc1 = _mm256_fmadd_ps(_mm256_loadu_ps(q + i + 8), decode8<Code>(row, scales, i + 8, n), acc1);
    }
    for (; i + 8 <= n; i += 8)
        acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(q + i), decode8<Code>(row, scales, i, n), acc0);
    float sum = hsum(_mm256_add_ps(acc0, acc1));
    for (; i < n; ++i)
        sum += q[i] * decode_value<Code>(row, scales, i, n);
    return sum;
}

template <RowCode Code>
void axpy(float a, const std::byte* row, const std::byte* scales, float* acc, std::size_t n) {
    const __m256 a8 = _mm256_set1_ps(a);
    std::size_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(acc + i, _mm256_fmadd_ps(a8, decode8<Code>(row, scales, i, n), _mm256_loadu_ps(acc + i)));
    for (; i < n; ++i)
        acc[i] += a * decode_value<Code>(row, scales, i, n);
}

template <RowCode Code>
constexpr KvRowOps ops() {
    return {dot<Code>, axpy<Code>};
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
