// NEON arithmetic of the prompt kernel's tiles (prompt_attention.h). The
// products keep a 4 x 16 block of results in 16 registers while the depth
// is walked: per step 4 loads of b and the 4 rows' a values (one load when
// they are adjacent, as the scores are: FMLA by element then picks each
// row's lane; else one load-and-broadcast per row) feed 16 FMAs. Every
// result is the same chain of FMAs over the depth in order, as the AVX2
// product's. The softmax step works on 4 query rows at once (the scores are
// key-major) with a polynomial exp; the soft cap with a polynomial tanh
// (neon_math.h: per lane the AVX2 version's operations).
#include <arm_neon.h>

#include <cstddef>
#include <limits>

#include "kernels/cpu/neon_math.h"
#include "kernels/cpu/prompt_attention.h"

namespace kvscope::kernels::cpu::detail {
namespace {

// How a block's I values of a at depth k reach the FMAs: Lanes (I = 4,
// a_row = 1) loads them as one vector, Broadcast one by one.
enum class ALoad { Lanes, Broadcast };

// c[i][j] (+)= a(i, k) * b[k][j] for I rows and J vectors of 4 columns;
// depth >= 1. The walk is a do-while as in the AVX2 product, whose loop
// that may run zero times GCC compiled with acc in memory; the loops over
// rows and columns carry "#pragma GCC unroll" (GCC 12 keeps arrays of
// vectors in registers only when their loops are unrolled before its
// scalarization pass).
template <std::size_t I, std::size_t J, ALoad Load>
void product_block(const float* a, std::size_t a_row, std::size_t a_depth, const float* b, std::size_t ldb, float* c,
                   std::size_t ldc, std::size_t depth, bool add) {
    static_assert(Load == ALoad::Broadcast || I == 4);
    float32x4_t acc[I][J];
#pragma GCC unroll 8
    for (std::size_t i = 0; i < I; ++i)
#pragma GCC unroll 8
        for (std::size_t j = 0; j < J; ++j)
            acc[i][j] = add ? vld1q_f32(c + i * ldc + 4 * j) : vdupq_n_f32(0.0f);
    std::size_t k = 0;
    do {
        float32x4_t bk[J];
#pragma GCC unroll 8
        for (std::size_t j = 0; j < J; ++j)
            bk[j] = vld1q_f32(b + k * ldb + 4 * j);
        if constexpr (Load == ALoad::Lanes) {
            const float32x4_t x = vld1q_f32(a + k * a_depth);
#pragma GCC unroll 8
            for (std::size_t j = 0; j < J; ++j) {
                acc[0][j] = vfmaq_laneq_f32(acc[0][j], bk[j], x, 0);
                acc[1][j] = vfmaq_laneq_f32(acc[1][j], bk[j], x, 1);
                acc[2][j] = vfmaq_laneq_f32(acc[2][j], bk[j], x, 2);
                acc[3][j] = vfmaq_laneq_f32(acc[3][j], bk[j], x, 3);
            }
        } else {
#pragma GCC unroll 8
            for (std::size_t i = 0; i < I; ++i) {
                const float32x4_t x = vld1q_dup_f32(a + i * a_row + k * a_depth);
#pragma GCC unroll 8
                for (std::size_t j = 0; j < J; ++j)
                    acc[i][j] = vfmaq_f32(acc[i][j], x, bk[j]);
            }
        }
    } while (++k < depth);
#pragma GCC unroll 8
    for (std::size_t i = 0; i < I; ++i)
#pragma GCC unroll 8
        for (std::size_t j = 0; j < J; ++j)
            vst1q_f32(c + i * ldc + 4 * j, acc[i][j]);
}

// Rows [0, rows) of J vectors of columns, in blocks of I rows, then of I / 2, ... 1.
template <std::size_t I, std::size_t J>
void product_rows(const float* a, std::size_t a_row, std::size_t a_depth, const float* b, std::size_t ldb, float* c,
                  std::size_t ldc, std::size_t rows, std::size_t depth, bool add) {
    std::size_t i = 0;
    for (; i + I <= rows; i += I) {
        if (I == 4 && a_row == 1)
            product_block<4, J, ALoad::Lanes>(a + i, a_row, a_depth, b, ldb, c + i * ldc, ldc, depth, add);
        else
            product_block<I, J, ALoad::Broadcast>(a + i * a_row, a_row, a_depth, b, ldb, c + i * ldc, ldc, depth, add);
    }
    if constexpr (I > 1)
        product_rows<I / 2, J>(a + i * a_row, a_row, a_depth, b, ldb, c + i * ldc, ldc, rows - i, depth, add);
}

void product(const float* a, std::size_t a_row, std::size_t a_depth, const float* b, std::size_t ldb, float* c,
             std::size_t ldc, std::size_t rows, std::size_t cols, std::size_t depth, bool add) {
    std::size_t j = 0;
    for (; j + 16 <= cols; j += 16)
        product_rows<4, 4>(a, a_row, a_depth, b + j, ldb, c + j, ldc, rows, depth, add);
    if (j < cols) // cols is a multiple of 8
        product_rows<4, 2>(a, a_row, a_depth, b + j, ldb, c + j, ldc, rows, depth, add);
}

void softmax_step(float* s, std::size_t ld, std::size_t keys, std::size_t cols, float* max, float* sum,
                  float* alpha) {
    const float32x4_t minus_inf = vdupq_n_f32(-std::numeric_limits<float>::infinity());
    for (std::size_t j = 0; j < cols; j += 4) {
        const float32x4_t old_max = vld1q_f32(max + j);
        float32x4_t new_max = old_max;
        for (std::size_t k = 0; k < keys; ++k)
            new_max = vmaxq_f32(new_max, vld1q_f32(s + k * ld + j));
        // Rows with nothing seen yet shift by 0: every -inf becomes 0, not NaN.
        const float32x4_t shift = vbslq_f32(vceqq_f32(new_max, minus_inf), vdupq_n_f32(0.0f), new_max);
        float32x4_t added = vdupq_n_f32(0.0f);
        for (std::size_t k = 0; k < keys; ++k) {
            const float32x4_t e = exp4(vsubq_f32(vld1q_f32(s + k * ld + j), shift));
            vst1q_f32(s + k * ld + j, e);
            added = vaddq_f32(added, e);
        }
        const float32x4_t a = exp4(vsubq_f32(old_max, shift));
        vst1q_f32(alpha + j, a);
        vst1q_f32(sum + j, vfmaq_f32(added, vld1q_f32(sum + j), a));
        vst1q_f32(max + j, new_max);
    }
}

void cap(float* s, std::size_t ld, std::size_t keys, std::size_t cols, float softcap) {
    const float32x4_t c = vdupq_n_f32(softcap);
    for (std::size_t k = 0; k < keys; ++k)
        for (std::size_t j = 0; j < cols; j += 4)
            vst1q_f32(s + k * ld + j, vmulq_f32(c, tanh4(vld1q_f32(s + k * ld + j))));
}

} // namespace

PromptOps neon_prompt_ops() { return {product, softmax_step, cap}; }

} // namespace kvscope::kernels::cpu::detail
