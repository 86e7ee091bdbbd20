// Internal to the *_avx2.cpp files (the only ones compiled with AVX2 and
// FMA): tanh of 8 floats, for soft-capped attention scores
// (prompt_attention_avx2.cpp, kv_row_ops_avx2.cpp) and the GELU gate
// (activation_avx2.cpp).
#pragma once

#include <immintrin.h>

#include "kernels/cpu/avx2_exp.h"

// Internal linkage (the unnamed namespace): see avx2_hsum.h.
namespace kvscope::kernels::cpu::detail {
namespace {

// tanh(x) as Cephes' tanhf computes it: for |x| <= 0.625 an odd
// polynomial, x + x^3 P(x^2); above, (1 - e) / (1 + e) with e = e^(-2|x|)
// (no cancellation there: e < 0.29), the sign put back. Within a few ulp
// of tanh; +-1 from |x| ~ 9 on, +-1 for +-inf.
inline __m256 tanh8(__m256 x) {
    const __m256 sign = _mm256_set1_ps(-0.0f);
    const __m256 magnitude = _mm256_andnot_ps(sign, x);
    const __m256 one = _mm256_set1_ps(1.0f);
    const __m256 e = exp8(_mm256_mul_ps(magnitude, _mm256_set1_ps(-2.0f)));
    const __m256 large = _mm256_or_ps(_mm256_div_ps(_mm256_sub_ps(one, e), _mm256_add_ps(one, e)),
                                      _mm256_and_ps(sign, x));
    const __m256 z = _mm256_mul_ps(x, x);
    __m256 p = _mm256_set1_ps(-5.70498872745e-3f);
    for (const float c : {2.06390887954e-2f, -5.37397155531e-2f, 1.33314422036e-1f, -3.33332819422e-1f})
        p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(c));
    const __m256 small = _mm256_fmadd_ps(_mm256_mul_ps(p, z), x, x);
    return _mm256_blendv_ps(small, large, _mm256_cmp_ps(magnitude, _mm256_set1_ps(0.625f), _CMP_GT_OQ));
}

} // namespace
} // namespace kvscope::kernels::cpu::detail
