#pragma once

#include <cstddef>

namespace kvscope::kernels::cpu {

// RMSNorm: out[i] = x[i] / sqrt(mean(x^2) + eps) * weight[i], i < n.
// out may alias x.
void rms_norm(const float* x, const float* weight, std::size_t n, float eps, float* out);

// rms_norm of each of `rows` rows of n values, row r at x + r * n and
// out + r * n, every row with the same weight (a batch's hidden states, or
// every head of Q or K rows for a QK-norm). The rows are shared among up
// to `threads` threads (parallel.h) when there are enough of them; each
// row's result is rms_norm's, whatever the count. out may alias x.
void rms_norm_rows(const float* x, const float* weight, std::size_t rows, std::size_t n, float eps, float* out,
                   int threads);

} // namespace kvscope::kernels::cpu
