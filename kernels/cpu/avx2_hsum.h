// Internal to the *_avx2.cpp files (the only ones compiled with AVX2): the
// horizontal sum and maximum of a vector of 8 floats.
#pragma once

#include <immintrin.h>

// Internal linkage (the unnamed namespace): these are compiled into the
// SIMD files too, and a shared inline copy could hand the portable path an
// instruction its CPU lacks.
namespace kvscope::kernels::cpu::detail {
namespace {

inline float hsum(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

inline float hmax(__m256 v) {
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    m = _mm_max_ss(m, _mm_movehdup_ps(m));
    return _mm_cvtss_f32(m);
}

} // namespace
} // namespace kvscope::kernels::cpu::detail
