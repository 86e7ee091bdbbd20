#include "kernels/cpu/norm.h"

#include <cmath>

namespace kvscope::kernels::cpu {

void rms_norm(const float* x, const float* weight, std::size_t n, float eps, float* out) {
    if (n == 0)
        return;
    // The sum of squares runs in double: one pass, no cancellation worries
    // for hidden sizes of many thousands, and negligible cost.
    double squares = 0.0;
    for (std::size_t i = 0; i < n; ++i)
        squares += static_cast<double>(x[i]) * x[i];
    const auto scale = static_cast<float>(1.0 / std::sqrt(squares / static_cast<double>(n) + eps));
    for (std::size_t i = 0; i < n; ++i)
        out[i] = x[i] * scale * weight[i];
}

} // namespace kvscope::kernels::cpu
