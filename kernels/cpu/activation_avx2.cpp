// AVX2 + FMA element-wise pieces of the transformer block (activation.h),
// compiled with those flags and called only after the run-time CPU check
// in simd_path.cpp.
#include <immintrin.h>

#include <cmath>

#include "kernels/cpu/activation.h"
#include "kernels/cpu/avx2_exp.h"

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

} // namespace kvscope::kernels::cpu::detail
