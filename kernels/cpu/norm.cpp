#include "kernels/cpu/norm.h"

#include <cmath>

#include "kernels/cpu/parallel_for.h"

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

namespace {

// Below this many values a call stays on the caller's thread: a decode
// step's one row costs less than handing it over.
constexpr std::size_t kParallelMinValues = 16 * 1024;

} // namespace

void rms_norm_rows(const float* x, const float* weight, std::size_t rows, std::size_t n, float eps, float* out,
                   int threads) {
    detail::parallel_for(rows, rows * n >= kParallelMinValues ? threads : 1, detail::Schedule::Even,
                         [&](std::size_t r, int) { rms_norm(x + r * n, weight, n, eps, out + r * n); });
}

} // namespace kvscope::kernels::cpu
