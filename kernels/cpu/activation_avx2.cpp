// AVX2 + FMA element-wise pieces of the transformer block (activation.h),
// compiled with those flags and called only after the run-time CPU check
// in simd_path.cpp.
#include <immintrin.h>

#include <cmath>

#include "kernels/cpu/activation.h"
#include "kernels/cpu/avx2_exp.h"
#include "kernels/cpu/avx2_tanh.h"
#include "kernels/cpu/gelu.h"

namespace kvscope::kernels::cpu::detail {

// silu(g) = g * sigmoid(g), the sigmoid from e = e^-|g|, which is at most
// 1 and so never overflows: 1 / (1 + e) for g >= 0, e / (1 + e) below.
// Within a few float ulps of g / (1 + e^-g); -0 for very negative g, as
// the formula's limit.
void avx2_silu_mul(const float* gate, const float* up, float* out, std::size_t n) {
    const __m256 one = _mm256_set1_ps(1.0f), sign = _mm256_set1_ps(-0.0f);
    std::size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 g = _mm256_loadu_ps(gate + i);
        const __m256 e = exp8(_mm256_or_ps(g, sign));
        const __m256 negative = _mm256_cmp_ps(g, _mm256_setzero_ps(), _CMP_LT_OQ);
        const __m256 sigmoid = _mm256_div_ps(_mm256_blendv_ps(one, e, negative), _mm256_add_ps(one, e));
        _mm256_storeu_ps(out + i, _mm256_mul_ps(_mm256_mul_ps(g, sigmoid), _mm256_loadu_ps(up + i)));
    }
    for (; i < n; ++i)
        out[i] = gate[i] / (1.0f + std::exp(-gate[i])) * up[i];
}

namespace {

// x rounded to f16 and back (F16C, round to nearest even as f32_to_f16).
__m256 f16_round8(__m256 x) { return _mm256_cvtph_ps(_mm256_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT)); }

// gelu_f16 (gelu.h) of 8 gates: sigmoid(2u) from e = e^-2|u| as in
// avx2_silu_mul, the exp polynomial in place of std::exp.
__m256 gelu_f16x8(__m256 x) {
    const __m256 one = _mm256_set1_ps(1.0f), sign = _mm256_set1_ps(-0.0f);
    const __m256 h = f16_round8(x);
    const __m256 u = _mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(kGeluSqrt2OverPi), h),
                                   _mm256_fmadd_ps(_mm256_mul_ps(_mm256_set1_ps(kGeluCoefA), h), h, one));
    const __m256 e = exp8(_mm256_or_ps(_mm256_add_ps(u, u), sign));
    const __m256 negative = _mm256_cmp_ps(u, _mm256_setzero_ps(), _CMP_LT_OQ);
    const __m256 sigmoid = _mm256_div_ps(_mm256_blendv_ps(one, e, negative), _mm256_add_ps(one, e));
    const __m256 gelu = f16_round8(_mm256_mul_ps(h, sigmoid));
    const __m256 cutoff = _mm256_set1_ps(kGeluCutoff);
    const __m256 above = _mm256_blendv_ps(gelu, x, _mm256_cmp_ps(x, cutoff, _CMP_GE_OQ));
    return _mm256_andnot_ps(_mm256_cmp_ps(x, _mm256_sub_ps(_mm256_setzero_ps(), cutoff), _CMP_LE_OQ), above);
}

} // namespace

void avx2_gelu_mul(const float* gate, const float* up, float* out, std::size_t n) {
    std::size_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(out + i, _mm256_mul_ps(gelu_f16x8(_mm256_loadu_ps(gate + i)), _mm256_loadu_ps(up + i)));
    for (; i < n; ++i)
        out[i] = gelu_f16(gate[i]) * up[i];
}

void avx2_softcap(float* x, std::size_t n, float cap) {
    const float inverse = 1.0f / cap;
    const __m256 cap8 = _mm256_set1_ps(cap), inverse8 = _mm256_set1_ps(inverse);
    std::size_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(x + i, _mm256_mul_ps(cap8, tanh8(_mm256_mul_ps(_mm256_loadu_ps(x + i), inverse8))));
    for (; i < n; ++i)
        x[i] = cap * std::tanh(x[i] * inverse);
}

} // namespace kvscope::kernels::cpu::detail
