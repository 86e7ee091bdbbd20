#pragma once

#include <cstddef>

namespace kvscope::kernels::cpu {

// RMSNorm: out[i] = x[i] / sqrt(mean(x^2) + eps) * weight[i], i < n.
// out may alias x.
void rms_norm(const float* x, const float* weight, std::size_t n, float eps, float* out);

} // namespace kvscope::kernels::cpu
