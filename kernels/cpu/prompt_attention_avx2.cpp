// AVX2 + FMA arithmetic of the prompt kernel's tiles (prompt_attention.h),
// compiled with those flags and called only after the run-time CPU check
// in simd_path.cpp. The products keep a 4 x 16 block of results in 8
// registers while the depth is walked: per step 2 loads of b and 4
// broadcasts of a feed 8 FMAs. The softmax step works on 8 query rows at
// once (the scores are key-major) with a polynomial exp; the soft cap
// with a polynomial tanh.
#include <immintrin.h>

#include <cstddef>
#include <limits>

#include "kernels/cpu/avx2_exp.h"
#include "kernels/cpu/avx2_tanh.h"
#include "kernels/cpu/prompt_attention.h"

namespace kvscope::kernels::cpu::detail {
namespace {

// c[i][j] (+)= a(i, k) * b[k][j] for I rows and J vectors of 8 columns;
// depth >= 1. The walk is a do-while on purpose: with a loop that may run
// zero times, GCC 12 keeps acc in memory and stores all of it on every
// step (measured: 56 against 90 GFLOP/s on one core for this 4 x 2 block).
template <std::size_t I, std::size_t J>
void product_block(const float* a, std::size_t a_row, std::size_t a_depth, const float* b, std::size_t ldb, float* c,
                   std::size_t ldc, std::size_t depth, bool add) {
    __m256 acc[I][J];
    for (std::size_t i = 0; i < I; ++i)
        for (std::size_t j = 0; j < J; ++j)
            acc[i][j] = add ? _mm256_loadu_ps(c + i * ldc + 8 * j) : _mm256_setzero_ps();
    std::size_t k = 0;
    do {
        __m256 bk[J];
        for (std::size_t j = 0; j < J; ++j)
            bk[j] = _mm256_loadu_ps(b + k * ldb + 8 * j);
        for (std::size_t i = 0; i < I; ++i) {
            const __m256 x = _mm256_broadcast_ss(a + i * a_row + k * a_depth);
            for (std::size_t j = 0; j < J; ++j)
                acc[i][j] = _mm256_fmadd_ps(x, bk[j], acc[i][j]);
        }
    } while (++k < depth);
    for (std::size_t i = 0; i < I; ++i)
        for (std::size_t j = 0; j < J; ++j)
            _mm256_storeu_ps(c + i * ldc + 8 * j, acc[i][j]);
}

// Rows [0, rows) of J vectors of columns, in blocks of I rows, then of I / 2, ... 1.
template <std::size_t I, std::size_t J>
void product_rows(const float* a, std::size_t a_row, std::size_t a_depth, const float* b, std::size_t ldb, float* c,
                  std::size_t ldc, std::size_t rows, std::size_t depth, bool add) {
    std::size_t i = 0;
    for (; i + I <= rows; i += I)
        product_block<I, J>(a + i * a_row, a_row, a_depth, b, ldb, c + i * ldc, ldc, depth, add);
    if constexpr (I > 1)
        product_rows<I / 2, J>(a + i * a_row, a_row, a_depth, b, ldb, c + i * ldc, ldc, rows - i, depth, add);
}

void product(const float* a, std::size_t a_row, std::size_t a_depth, const float* b, std::size_t ldb, float* c,
             std::size_t ldc, std::size_t rows, std::size_t cols, std::size_t depth, bool add) {
    std::size_t j = 0;
    for (; j + 16 <= cols; j += 16)
        product_rows<4, 2>(a, a_row, a_depth, b + j, ldb, c + j, ldc, rows, depth, add);
    if (j < cols) // cols is a multiple of 8
        product_rows<4, 1>(a, a_row, a_depth, b + j, ldb, c + j, ldc, rows, depth, add);
}

void softmax_step(float* s, std::size_t ld, std::size_t keys, std::size_t cols, float* max, float* sum,
                  float* alpha) {
    for (std::size_t j = 0; j < cols; j += 8) {
        const __m256 old_max = _mm256_loadu_ps(max + j);
        __m256 new_max = old_max;
        for (std::size_t k = 0; k < keys; ++k)
            new_max = _mm256_max_ps(new_max, _mm256_loadu_ps(s + k * ld + j));
        // Rows with nothing seen yet shift by 0: every -inf becomes 0, not NaN.
        const __m256 nothing = _mm256_cmp_ps(new_max, _mm256_set1_ps(-std::numeric_limits<float>::infinity()), _CMP_EQ_OQ);
        const __m256 shift = _mm256_blendv_ps(new_max, _mm256_setzero_ps(), nothing);
        __m256 added = _mm256_setzero_ps();
        for (std::size_t k = 0; k < keys; ++k) {
            const __m256 e = exp8(_mm256_sub_ps(_mm256_loadu_ps(s + k * ld + j), shift));
            _mm256_storeu_ps(s + k * ld + j, e);
            added = _mm256_add_ps(added, e);
        }
        const __m256 a = exp8(_mm256_sub_ps(old_max, shift));
        _mm256_storeu_ps(alpha + j, a);
        _mm256_storeu_ps(sum + j, _mm256_fmadd_ps(_mm256_loadu_ps(sum + j), a, added));
        _mm256_storeu_ps(max + j, new_max);
    }
}

void cap(float* s, std::size_t ld, std::size_t keys, std::size_t cols, float softcap) {
    const __m256 c = _mm256_set1_ps(softcap);
    for (std::size_t k = 0; k < keys; ++k)
        for (std::size_t j = 0; j < cols; j += 8)
            _mm256_storeu_ps(s + k * ld + j, _mm256_mul_ps(c, tanh8(_mm256_loadu_ps(s + k * ld + j))));
}

} // namespace

PromptOps avx2_prompt_ops() { return {product, softmax_step, cap}; }

} // namespace kvscope::kernels::cpu::detail
