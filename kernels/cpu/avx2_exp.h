// Internal to the *_avx2.cpp files (the only ones compiled with AVX2 and
// FMA): a polynomial e^x of 8 floats, for the softmax of the prompt tiles
// (prompt_attention_avx2.cpp) and of decode steps (kv_row_ops_avx2.cpp).
#pragma once

#include <immintrin.h>

#include <initializer_list>

// Internal linkage (the unnamed namespace): see avx2_hsum.h.
namespace kvscope::kernels::cpu::detail {
namespace {

// e^x for x <= 0 (Cephes' expf: x = n ln 2 + r, |r| <= ln 2 / 2, a degree-7
// polynomial for e^r, 2^n put into the exponent; within 2 ulp). Below
// -87.3 (e^x under the smallest normal float), and for -inf, 0. NaN stays NaN.
inline __m256 exp8(__m256 x) {
    const __m256 lowest = _mm256_set1_ps(-87.33654f); // ln(2^-126)
    const __m256 underflow = _mm256_cmp_ps(x, lowest, _CMP_LT_OQ);
    x = _mm256_max_ps(lowest, x); // NaN: the second operand
    const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                     _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
    __m256 y = _mm256_set1_ps(1.9875691500e-4f);
    for (const float c : {1.3981999507e-3f, 8.3334519073e-3f, 4.1665795894e-2f, 1.6666665459e-1f, 5.0000001201e-1f})
        y = _mm256_fmadd_ps(y, r, _mm256_set1_ps(c));
    y = _mm256_fmadd_ps(y, _mm256_mul_ps(r, r), _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
    const __m256i exponent = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
    return _mm256_andnot_ps(underflow, _mm256_mul_ps(y, _mm256_castsi256_ps(exponent)));
}

} // namespace
} // namespace kvscope::kernels::cpu::detail
