// AVX2 + FMA + F16C row dot products. This file alone is compiled with
// -mavx2 -mfma -mf16c and is only called after a run-time CPU check
// (simd_path.cpp), so the rest of the build stays portable.
//
// Quantized weights meet 8-bit activations in integer arithmetic:
// _mm256_maddubs_epi16 multiplies unsigned by signed bytes and adds
// neighbours into 16 bits, _mm256_madd_epi16 widens (and scales) to 32 bits.
// maddubs needs its first operand unsigned: the K-quants' codes already are;
// for signed codes (Q8_0/Q4_0/Q5_0/MXFP4) the sign of the weight moves onto the
// activation (|w| * sign(w)a), which is why activations avoid -128.
#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "kernels/cpu/activation_quant.h"
#include "kernels/cpu/avx2_hsum.h"
#include "kernels/cpu/blocks32_dot.h"
#include "kernels/cpu/k_quant_scales.h"
#include "kernels/cpu/quant_blocks.h"
#include "kernels/cpu/row_dot.h"

namespace kvscope::kernels::cpu::detail {
namespace {

// 8 x int32 partial sums of scale * u[i] * a[i]; u unsigned codes < 64.
__m256i dot_u8_scaled(__m256i u, __m256i a, __m256i scale16) {
    return _mm256_madd_epi16(_mm256_maddubs_epi16(u, a), scale16);
}

// ---- activation quantization ---------------------------------------------

int hsum_epi32(__m256i v) {
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(1, 0, 3, 2)));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(2, 3, 0, 1)));
    return _mm_cvtsi128_si32(s);
}

} // namespace

// The same operations as quantize_block_scalar (activation_quant.cpp), 8 at
// a time: maxps ignores NaN like the scalar comparison does, and rounding
// is to nearest even in both, so the codes are identical.
float quantize_block_avx2(const float* x, std::size_t n, std::int8_t* q, std::int16_t* sums16) {
    const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF));
    __m256 amax8 = _mm256_setzero_ps();
    for (std::size_t i = 0; i < n; i += 8)
        amax8 = _mm256_max_ps(_mm256_and_ps(_mm256_loadu_ps(x + i), abs_mask), amax8);
    const float amax = hmax(amax8);
    const __m256 inverse = _mm256_set1_ps(code_multiplier(amax));
    const __m256 lo = _mm256_set1_ps(-127.0f);
    const __m256 hi = _mm256_set1_ps(127.0f);
    for (std::size_t i = 0; i < n; i += 32) {
        __m256i codes[4];
        for (std::size_t k = 0; k < 4; ++k) {
            // max_ps returns its second operand when the first is NaN: -127.
            const __m256 v = _mm256_min_ps(_mm256_max_ps(_mm256_mul_ps(_mm256_loadu_ps(x + i + 8 * k), inverse), lo), hi);
            codes[k] = _mm256_cvtps_epi32(_mm256_round_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
        }
        if (sums16 != nullptr) {
            sums16[i / 16] = static_cast<std::int16_t>(hsum_epi32(_mm256_add_epi32(codes[0], codes[1])));
            sums16[i / 16 + 1] = static_cast<std::int16_t>(hsum_epi32(_mm256_add_epi32(codes[2], codes[3])));
        }
        // Packing interleaves 128-bit lanes; the permute restores the order.
        const __m256i packed = _mm256_packs_epi16(_mm256_packs_epi32(codes[0], codes[1]),
                                                  _mm256_packs_epi32(codes[2], codes[3]));
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + i),
                            _mm256_permutevar8x32_epi32(packed, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7)));
    }
    return amax;
}

namespace {

// ---- float weights: four accumulators hide the FMA latency -------------

// Float weights for N inputs at once: each weight vector is loaded (and
// converted) once. Per input, four accumulators hide the FMA latency; the
// operations and their order do not depend on N, so every input's result
// is bit-identical to its N = 1 result.
template <int N, typename Load8>
void dot_floats_n(Load8 load8, float (*load1)(const std::byte*, std::size_t), const std::byte* w,
                  const std::byte* xb, std::size_t x_stride, std::size_t n, float* out) {
    const float* x[N];
    __m256 acc[N][4];
    for (int j = 0; j < N; ++j) {
        x[j] = reinterpret_cast<const float*>(xb + j * x_stride);
        for (int k = 0; k < 4; ++k)
            acc[j][k] = _mm256_setzero_ps();
    }
    std::size_t i = 0;
    for (; i + 32 <= n; i += 32)
        for (std::size_t k = 0; k < 4; ++k) {
            const __m256 wv = load8(w, i + 8 * k);
            for (int j = 0; j < N; ++j)
                acc[j][k] = _mm256_fmadd_ps(wv, _mm256_loadu_ps(x[j] + i + 8 * k), acc[j][k]);
        }
    for (; i + 8 <= n; i += 8) {
        const __m256 wv = load8(w, i);
        for (int j = 0; j < N; ++j)
            acc[j][0] = _mm256_fmadd_ps(wv, _mm256_loadu_ps(x[j] + i), acc[j][0]);
    }
    for (int j = 0; j < N; ++j) {
        float sum = hsum(_mm256_add_ps(_mm256_add_ps(acc[j][0], acc[j][1]), _mm256_add_ps(acc[j][2], acc[j][3])));
        for (std::size_t t = i; t < n; ++t)
            sum += load1(w, t) * x[j][t];
        out[j] = sum;
    }
}

float load1_f32(const std::byte* p, std::size_t i) {
    float v;
    std::memcpy(&v, p + 4 * i, 4);
    return v;
}
float load1_f16(const std::byte* p, std::size_t i) { return half(p + 2 * i); }
float load1_bf16(const std::byte* p, std::size_t i) {
    std::uint16_t bits;
    std::memcpy(&bits, p + 2 * i, 2);
    const std::uint32_t wide = std::uint32_t{bits} << 16;
    float v;
    std::memcpy(&v, &wide, 4);
    return v;
}
__m256 load8_f32(const std::byte* p, std::size_t i) {
    return _mm256_loadu_ps(reinterpret_cast<const float*>(p) + i);
}
__m256 load8_f16(const std::byte* p, std::size_t i) { return _mm256_cvtph_ps(load128(p + 2 * i)); }
__m256 load8_bf16(const std::byte* p, std::size_t i) {
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(load128(p + 2 * i)), 16));
}

// Floats: two inputs per pass (8 accumulators; more would spill).
template <__m256 (*Load8)(const std::byte*, std::size_t), float (*Load1)(const std::byte*, std::size_t)>
void multi_floats(const std::byte* w, const void* x, std::size_t x_stride, std::size_t count,
                  std::size_t cols, float* out) {
    const auto* xb = static_cast<const std::byte*>(x);
    if (count == 2)
        dot_floats_n<2>(Load8, Load1, w, xb, x_stride, cols, out);
    else
        dot_floats_n<1>(Load8, Load1, w, xb, x_stride, cols, out);
}

// Unsigned x signed bytes to int32 sums with AVX2 alone: maddubs adds
// neighbouring products into 16 bits, madd by one widens pairs to 32.
struct MaddubsDot {
    static __m256i sums(__m256i u, __m256i s) {
        return _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1));
    }
};

// ---- K-quants ------------------------------------------------------------

int min_terms(const KScales& s, const ActBlock256& a) {
    int sum = 0;
    for (int j = 0; j < 8; ++j)
        sum += s.min[j] * (a.bsums[2 * j] + a.bsums[2 * j + 1]);
    return sum;
}

// Q4_K/Q5_K for N inputs; they share everything but the fifth bit:
// `high_bits(block, chunk, out)` gives, for the chunk's 32 bytes, the bits to
// OR into the low and high nibbles. Scales are unpacked and codes decoded
// once per super-block; per input the operations and their order do not
// depend on N. Two inputs per pass: with four the accumulators spill and it
// measured slower.
template <typename Block, int N, typename HighBits>
void dot_k_scaled_n(const std::byte* w, const std::byte* xb, std::size_t x_stride, std::size_t cols,
                    HighBits high_bits, float* out) {
    const ActBlock256* x[N];
    __m256 acc[N];
    float min_sum[N];
    for (int j = 0; j < N; ++j) {
        x[j] = reinterpret_cast<const ActBlock256*>(xb + j * x_stride);
        acc[j] = _mm256_setzero_ps();
        min_sum[j] = 0.0f;
    }
    const __m256i low4 = _mm256_set1_epi8(0x0F);
    for (std::size_t b = 0; b < cols / kActSuperValues; ++b) {
        const std::byte* block = w + b * sizeof(Block);
        const KScales s = unpack_k_scales(reinterpret_cast<const std::uint8_t*>(block + offsetof(Block, scales)));
        const auto* qs = reinterpret_cast<const std::uint8_t*>(block + offsetof(Block, qs));
        __m256i sumi[N];
        for (int j = 0; j < N; ++j)
            sumi[j] = _mm256_setzero_si256();
        for (int c = 0; c < 4; ++c) {
            const __m256i q = load256(qs + 32 * c);
            __m256i hi_lo[2];
            high_bits(block, c, hi_lo);
            const __m256i lo = _mm256_or_si256(_mm256_and_si256(q, low4), hi_lo[0]);
            const __m256i hi = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(q, 4), low4), hi_lo[1]);
            const __m256i scale_lo = _mm256_set1_epi16(s.scale[2 * c]);
            const __m256i scale_hi = _mm256_set1_epi16(s.scale[2 * c + 1]);
            for (int j = 0; j < N; ++j) {
                const ActBlock256& a = x[j][b];
                sumi[j] = _mm256_add_epi32(sumi[j], dot_u8_scaled(lo, load256(a.qs + 64 * c), scale_lo));
                sumi[j] = _mm256_add_epi32(sumi[j], dot_u8_scaled(hi, load256(a.qs + 64 * c + 32), scale_hi));
            }
        }
        const float dw = half(block + offsetof(Block, d));
        const float dmin = half(block + offsetof(Block, dmin));
        for (int j = 0; j < N; ++j) {
            const ActBlock256& a = x[j][b];
            const float d = dw * a.d;
            acc[j] = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(sumi[j]), acc[j]);
            min_sum[j] += dmin * a.d * static_cast<float>(min_terms(s, a));
        }
    }
    for (int j = 0; j < N; ++j)
        out[j] = hsum(acc[j]) - min_sum[j];
}

template <typename Block, typename HighBits>
void multi_k_scaled(const std::byte* w, const void* x, std::size_t x_stride, std::size_t count,
                    std::size_t cols, float* out, HighBits high_bits) {
    const auto* xb = static_cast<const std::byte*>(x);
    if (count == 2)
        dot_k_scaled_n<Block, 2>(w, xb, x_stride, cols, high_bits, out);
    else
        dot_k_scaled_n<Block, 1>(w, xb, x_stride, cols, high_bits, out);
}

void multi_q4_k(const std::byte* w, const void* x, std::size_t s, std::size_t c, std::size_t cols, float* out) {
    multi_k_scaled<BlockQ4_K>(w, x, s, c, cols, out, [](const std::byte*, int, __m256i* o) {
        o[0] = o[1] = _mm256_setzero_si256();
    });
}

void multi_q5_k(const std::byte* w, const void* x, std::size_t s, std::size_t c, std::size_t cols, float* out) {
    multi_k_scaled<BlockQ5_K>(w, x, s, c, cols, out, [](const std::byte* block, int ch, __m256i* o) {
        const __m256i qh = load256(block + offsetof(BlockQ5_K, qh));
        const __m256i one = _mm256_set1_epi8(1);
        const __m128i shift_lo = _mm_cvtsi32_si128(2 * ch);
        const __m128i shift_hi = _mm_cvtsi32_si128(2 * ch + 1);
        o[0] = _mm256_slli_epi16(_mm256_and_si256(_mm256_srl_epi16(qh, shift_lo), one), 4);
        o[1] = _mm256_slli_epi16(_mm256_and_si256(_mm256_srl_epi16(qh, shift_hi), one), 4);
    });
}

// Q6_K for N inputs: codes offset by 32, so 32 * sum_s scale[s] * sum(a)_s
// is subtracted; per input the operations and their order do not depend on N.
template <int N>
void dot_q6_k_n(const std::byte* w, const std::byte* xb, std::size_t x_stride, std::size_t cols, float* out) {
    const ActBlock256* x[N];
    __m256 acc[N];
    for (int j = 0; j < N; ++j) {
        x[j] = reinterpret_cast<const ActBlock256*>(xb + j * x_stride);
        acc[j] = _mm256_setzero_ps();
    }
    const __m256i low4 = _mm256_set1_epi8(0x0F);
    const __m256i low2 = _mm256_set1_epi8(0x03);
    for (std::size_t b = 0; b < cols / kActSuperValues; ++b) {
        const std::byte* block = w + b * sizeof(BlockQ6_K);
        std::int8_t scales[16];
        std::memcpy(scales, block + offsetof(BlockQ6_K, scales), 16);
        __m256i sumi[N];
        for (int j = 0; j < N; ++j)
            sumi[j] = _mm256_setzero_si256();
        for (int h = 0; h < 2; ++h) {
            const std::byte* ql = block + offsetof(BlockQ6_K, ql) + 64 * h;
            const __m256i l0 = load256(ql);
            const __m256i l1 = load256(ql + 32);
            const __m256i qh = load256(block + offsetof(BlockQ6_K, qh) + 32 * h);
            const auto high = [&](int shift) {
                return _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, shift), low2), 4);
            };
            const __m256i q[4] = {
                _mm256_or_si256(_mm256_and_si256(l0, low4), high(0)),
                _mm256_or_si256(_mm256_and_si256(l1, low4), high(2)),
                _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), low4), high(4)),
                _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), low4), high(6)),
            };
            for (int k = 0; k < 4; ++k) {
                const std::int8_t* sc = scales + 8 * h + 2 * k;
                const __m256i scale16 = _mm256_set_m128i(_mm_set1_epi16(sc[1]), _mm_set1_epi16(sc[0]));
                for (int j = 0; j < N; ++j)
                    sumi[j] = _mm256_add_epi32(sumi[j], dot_u8_scaled(q[k], load256(x[j][b].qs + 128 * h + 32 * k), scale16));
            }
        }
        const float dw = half(block + offsetof(BlockQ6_K, d));
        for (int j = 0; j < N; ++j) {
            const ActBlock256& a = x[j][b];
            int offset = 0;
            for (int s = 0; s < 16; ++s)
                offset += scales[s] * a.bsums[s];
            const __m256i si = _mm256_sub_epi32(sumi[j], _mm256_setr_epi32(32 * offset, 0, 0, 0, 0, 0, 0, 0));
            const float d = dw * a.d;
            acc[j] = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(si), acc[j]);
        }
    }
    for (int j = 0; j < N; ++j)
        out[j] = hsum(acc[j]);
}

void multi_q6_k(const std::byte* w, const void* x, std::size_t s, std::size_t c, std::size_t cols, float* out) {
    const auto* xb = static_cast<const std::byte*>(x);
    if (c == 2)
        dot_q6_k_n<2>(w, xb, s, cols, out);
    else
        dot_q6_k_n<1>(w, xb, s, cols, out);
}

} // namespace

RowDot avx2_row_dot(WeightType type) {
    switch (type) {
    case WeightType::F32: return single_input<multi_floats<load8_f32, load1_f32>>;
    case WeightType::F16: return single_input<multi_floats<load8_f16, load1_f16>>;
    case WeightType::BF16: return single_input<multi_floats<load8_bf16, load1_bf16>>;
    case WeightType::Q8_0: return single_input<multi_q8_0<MaddubsDot>>;
    case WeightType::Q4_0: return single_input<multi_q4_0<MaddubsDot>>;
    case WeightType::Q5_0: return single_input<multi_q5_0<MaddubsDot>>;
    case WeightType::MXFP4: return single_input<multi_mxfp4<MaddubsDot>>;
    case WeightType::Q4_K: return single_input<multi_q4_k>;
    case WeightType::Q5_K: return single_input<multi_q5_k>;
    case WeightType::Q6_K: return single_input<multi_q6_k>;
    default: return nullptr; // the scalar kernel (their packed tiles are the fast path)
    }
}

RowDotMultiFn avx2_row_dot_multi(WeightType type) {
    switch (type) {
    case WeightType::F32: return {multi_floats<load8_f32, load1_f32>, 2};
    case WeightType::F16: return {multi_floats<load8_f16, load1_f16>, 2};
    case WeightType::BF16: return {multi_floats<load8_bf16, load1_bf16>, 2};
    case WeightType::Q8_0: return {multi_q8_0<MaddubsDot>, 4};
    case WeightType::Q4_0: return {multi_q4_0<MaddubsDot>, 4};
    case WeightType::Q5_0: return {multi_q5_0<MaddubsDot>, 4};
    case WeightType::MXFP4: return {multi_mxfp4<MaddubsDot>, 4};
    case WeightType::Q4_K: return {multi_q4_k, 2};
    case WeightType::Q5_K: return {multi_q5_k, 2};
    case WeightType::Q6_K: return {multi_q6_k, 2};
    default: return {};
    }
}

} // namespace kvscope::kernels::cpu::detail
