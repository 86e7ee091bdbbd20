// AVX2 + FMA + F16C KV row operations (compiled with those flags, called
// only after the run-time CPU check in simd_path.cpp). Each format decodes
// 8 values into a vector of floats in registers and feeds them straight to
// the FMA: F16C converts halves, int4/int2 codes come out of one broadcast
// word with per-lane variable shifts, fp8 is a shift, an integer add and a
// blend (e4m3x8). Scales are loaded once per group of 32 values. The last
// head_dim % 8 values go through the portable decoder. The operations take
// a block's run of rows at once (kv_row_ops.h).
#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>

#include "kernels/cpu/avx2_exp.h"
#include "kernels/cpu/avx2_hsum.h"
#include "kernels/cpu/avx2_tanh.h"
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

// The horizontal sums of four vectors as one vector, each summed in
// hsum's order (halves folded, then (s0 + s2) + (s1 + s3)): a row's score
// comes out the same whichever rows share its reduction.
__m128 hsum4(const __m256 (&v)[4]) {
    __m128 s[4];
    for (std::size_t j = 0; j < 4; ++j)
        s[j] = _mm_add_ps(_mm256_castps256_ps128(v[j]), _mm256_extractf128_ps(v[j], 1));
    const __m128 s01 = _mm_add_ps(_mm_unpacklo_ps(s[0], s[1]), _mm_unpackhi_ps(s[0], s[1]));
    const __m128 s23 = _mm_add_ps(_mm_unpacklo_ps(s[2], s[3]), _mm_unpackhi_ps(s[2], s[3]));
    return _mm_add_ps(_mm_movelh_ps(s01, s23), _mm_movehl_ps(s23, s01));
}

// Values i..i+7 of R rows into accumulator P of each (row, head): the 8
// query values of each head loaded once for all R rows, each row's 8
// values decoded once for all H heads.
template <RowCode Code, std::size_t H, std::size_t R, std::size_t P>
void dot8(const float* q, const std::byte* const (&row)[R], const std::byte* const (&scales)[R], std::size_t i,
          std::size_t n, const Affine (&shared)[R], __m256 (&acc)[R][H][2]) {
    __m256 q8[H];
    for (std::size_t h = 0; h < H; ++h)
        q8[h] = _mm256_loadu_ps(q + h * n + i);
    for (std::size_t r = 0; r < R; ++r) {
        const __m256 v = decode8<Code>(row[r], scales[r], i, n, shared[r]);
        for (std::size_t h = 0; h < H; ++h)
            acc[r][h][P] = _mm256_fmadd_ps(q8[h], v, acc[r][h][P]);
    }
}

// Dot products of R rows x H heads (R * H <= 4: one hsum4), two
// accumulators each: 2 * R * H independent FMA chains hide the FMA latency
// that one row's chain would expose. Rows are walked group by group
// (kKvGroup values, a multiple of 16), 8 values at a time; the last n % 8
// values go through the portable decoder.
template <RowCode Code, std::size_t H, std::size_t R>
void dot_step(const float* q, const KvRows& rows, std::size_t first_row, std::size_t n, float* out,
              std::size_t out_stride) {
    static_assert(R * H <= 4 && kKvGroup % 16 == 0);
    const std::byte* row[R];
    const std::byte* scales[R];
    for (std::size_t r = 0; r < R; ++r) {
        row[r] = rows.first + (first_row + r) * rows.stride;
        scales[r] = rows.scales + (first_row + r) * rows.scale_stride;
    }
    __m256 acc[R][H][2];
    for (std::size_t r = 0; r < R; ++r)
        for (std::size_t h = 0; h < H; ++h)
            acc[r][h][0] = acc[r][h][1] = _mm256_setzero_ps();
    const std::size_t whole = n / 8 * 8;
    for (std::size_t first = 0; first < whole; first += kKvGroup) {
        Affine shared[R];
        for (std::size_t r = 0; r < R; ++r)
            shared[r] = affine<Code>(scales[r], first / kKvGroup);
        const std::size_t end = std::min(whole, first + kKvGroup);
        // Even and odd 8s of the group into accumulators 0 and 1, written
        // out so that the accumulators stay in registers.
        for (std::size_t i = first; i < end; i += 16) {
            dot8<Code, H, R, 0>(q, row, scales, i, n, shared, acc);
            if (i + 8 < end)
                dot8<Code, H, R, 1>(q, row, scales, i + 8, n, shared, acc);
        }
    }
    __m256 sums[4] = {};
    for (std::size_t r = 0; r < R; ++r)
        for (std::size_t h = 0; h < H; ++h)
            sums[r * H + h] = _mm256_add_ps(acc[r][h][0], acc[r][h][1]);
    float dots[4];
    _mm_storeu_ps(dots, hsum4(sums));
    for (std::size_t r = 0; r < R; ++r) {
        for (std::size_t i = whole; i < n; ++i) {
            const float x = decode_value<Code>(row[r], scales[r], i, n);
            for (std::size_t h = 0; h < H; ++h)
                dots[r * H + h] += q[h * n + i] * x;
        }
        for (std::size_t h = 0; h < H; ++h)
            out[h * out_stride + first_row + r] = dots[r * H + h];
    }
}

// Rows [first_row, rows.count) in steps of R rows, then of R / 2, ... 1.
template <RowCode Code, std::size_t H, std::size_t R>
void dot_from(const float* q, const KvRows& rows, std::size_t first_row, std::size_t n, float* out,
              std::size_t out_stride) {
    for (; first_row + R <= rows.count; first_row += R)
        dot_step<Code, H, R>(q, rows, first_row, n, out, out_stride);
    if constexpr (R > 1)
        dot_from<Code, H, R / 2>(q, rows, first_row, n, out, out_stride);
}

template <RowCode Code, std::size_t H>
void dot(const float* q, const KvRows& rows, std::size_t n, float* out, std::size_t out_stride) {
    constexpr std::size_t kRowsPerStep = H == 1 ? 4 : H == 2 ? 2 : 1;
    dot_from<Code, H, kRowsPerStep>(q, rows, 0, n, out, out_stride);
}

// Values [first, first + 8 * V) of the H accumulators, held in registers
// while every row of the run is added in: each accumulator is loaded and
// stored once per run instead of once per row. Per value the rows are
// added in order with one FMA each, as one row at a time would.
template <RowCode Code, std::size_t H, std::size_t V>
void axpy_chunk(const float* w, std::size_t w_stride, const KvRows& rows, std::size_t first, float* acc,
                std::size_t n) {
    __m256 sum[H][V];
    for (std::size_t h = 0; h < H; ++h)
        for (std::size_t v = 0; v < V; ++v)
            sum[h][v] = _mm256_loadu_ps(acc + h * n + first + 8 * v);
    for (std::size_t r = 0; r < rows.count; ++r) {
        const std::byte* row = rows.first + r * rows.stride;
        const std::byte* scales = rows.scales + r * rows.scale_stride;
        __m256 weight[H];
        for (std::size_t h = 0; h < H; ++h)
            weight[h] = _mm256_set1_ps(w[h * w_stride + r]);
        Affine shared{};
        for (std::size_t v = 0; v < V; ++v) {
            const std::size_t i = first + 8 * v;
            if (v == 0 || i % kKvGroup == 0)
                shared = affine<Code>(scales, i / kKvGroup);
            const __m256 x = decode8<Code>(row, scales, i, n, shared);
            for (std::size_t h = 0; h < H; ++h)
                sum[h][v] = _mm256_fmadd_ps(weight[h], x, sum[h][v]);
        }
    }
    for (std::size_t h = 0; h < H; ++h)
        for (std::size_t v = 0; v < V; ++v)
            _mm256_storeu_ps(acc + h * n + first + 8 * v, sum[h][v]);
}

// `vectors` 8-value vectors from `first` on, in chunks of V, then V / 2, ... 1.
template <RowCode Code, std::size_t H, std::size_t V>
void axpy_from(const float* w, std::size_t w_stride, const KvRows& rows, std::size_t first, std::size_t vectors,
               float* acc, std::size_t n) {
    for (; vectors >= V; vectors -= V, first += 8 * V)
        axpy_chunk<Code, H, V>(w, w_stride, rows, first, acc, n);
    if constexpr (V > 1)
        axpy_from<Code, H, V / 2>(w, w_stride, rows, first, vectors, acc, n);
}

template <RowCode Code, std::size_t H>
void axpy(const float* w, std::size_t w_stride, const KvRows& rows, float* acc, std::size_t n) {
    // 8 accumulator registers (64 values for one head), leaving the other 8
    // for the weights, the decoded values and their scales.
    constexpr std::size_t kVectors = H == 1 ? 8 : H == 2 ? 4 : 2;
    const std::size_t whole = n / 8 * 8;
    axpy_from<Code, H, kVectors>(w, w_stride, rows, 0, whole / 8, acc, n);
    axpy_values<Code, H>(w, w_stride, rows, whole, acc, n);
}

template <RowCode Code>
void decode(const KvRows& rows, std::size_t n, float* out, std::size_t out_stride) {
    const std::size_t whole = n / 8 * 8;
    for (std::size_t r = 0; r < rows.count; ++r) {
        const std::byte* row = rows.first + r * rows.stride;
        const std::byte* scales = rows.scales + r * rows.scale_stride;
        float* values = out + r * out_stride;
        Affine shared{};
        for (std::size_t i = 0; i < whole; i += 8) {
            if (i % kKvGroup == 0)
                shared = affine<Code>(scales, i / kKvGroup);
            _mm256_storeu_ps(values + i, decode8<Code>(row, scales, i, n, shared));
        }
        for (std::size_t i = whole; i < n; ++i)
            values[i] = decode_value<Code>(row, scales, i, n);
    }
}

template <RowCode Code, std::size_t... H>
constexpr KvRowOps ops(std::index_sequence<H...>) {
    return {{dot<Code, H + 1>...}, {axpy<Code, H + 1>...}, decode<Code>};
}

template <RowCode Code>
constexpr KvRowOps ops() {
    return ops<Code>(std::make_index_sequence<kSharedHeads>());
}

} // namespace

// The scores past count, up to the next multiple of 8, are set to -inf
// (after the scale and soft cap, which would make them finite) so that
// every pass works in whole vectors: they leave the max alone and come out
// of the exp as 0. Per lane sums, added up by hsum: the same order for a
// row whatever else the step computes.
float avx2_softmax_row(float* scores, std::size_t count, float scale, float softcap, float* max_out) {
    const std::size_t padded = (count + 7) / 8 * 8;
    std::fill(scores + count, scores + padded, 0.0f);
    const __m256 scale8 = _mm256_set1_ps(scale), cap8 = _mm256_set1_ps(softcap);
    const __m256 lane = _mm256_setr_ps(0, 1, 2, 3, 4, 5, 6, 7);
    __m256 max8 = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
    for (std::size_t p = 0; p < padded; p += 8) {
        __m256 x = _mm256_mul_ps(_mm256_loadu_ps(scores + p), scale8);
        if (softcap > 0.0f)
            x = _mm256_mul_ps(cap8, tanh8(x));
        if (p + 8 > count) // lanes from count on
            x = _mm256_blendv_ps(x, _mm256_set1_ps(-std::numeric_limits<float>::infinity()),
                                 _mm256_cmp_ps(lane, _mm256_set1_ps(static_cast<float>(count - p)), _CMP_GE_OQ));
        _mm256_storeu_ps(scores + p, x);
        max8 = _mm256_max_ps(max8, x);
    }
    *max_out = hmax(max8);
    const __m256 max = _mm256_set1_ps(*max_out);
    __m256 sum = _mm256_setzero_ps();
    for (std::size_t p = 0; p < padded; p += 8) {
        const __m256 e = exp8(_mm256_sub_ps(_mm256_loadu_ps(scores + p), max));
        _mm256_storeu_ps(scores + p, e);
        sum = _mm256_add_ps(sum, e);
    }
    return hsum(sum);
}

void avx2_store_f16_row(const float* src, std::size_t n, std::byte* row) {
    std::size_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm_storeu_si128(reinterpret_cast<__m128i*>(row + 2 * i),
                         _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT));
    for (; i < n; ++i)
        put_f16(row, i, src[i]);
}

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
