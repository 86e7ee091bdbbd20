#include "kernels/cpu/activation.h"

#include <algorithm>
#include <cmath>

#include "kernels/cpu/simd_path.h"

namespace kvscope::kernels::cpu {

void softmax(float* x, std::size_t n) {
    if (n == 0)
        return;
    const float max = *std::max_element(x, x + n);
    double sum = 0.0;
    for (std::size_t i = 0; i < n; ++i) {
        x[i] = std::exp(x[i] - max);
        sum += x[i];
    }
    const auto inverse = static_cast<float>(1.0 / sum);
    for (std::size_t i = 0; i < n; ++i)
        x[i] *= inverse;
}

void silu_mul(const float* gate, const float* up, float* out, std::size_t n) {
#if defined(KVSCOPE_KERNELS_AVX2)
    if (simd_path() == SimdPath::Avx2)
        return detail::avx2_silu_mul(gate, up, out, n);
#endif
    // For very negative g, exp(-g) overflows to inf and g / inf = -0: the
    // right limit, no NaN.
    for (std::size_t i = 0; i < n; ++i)
        out[i] = gate[i] / (1.0f + std::exp(-gate[i])) * up[i];
}

} // namespace kvscope::kernels::cpu
