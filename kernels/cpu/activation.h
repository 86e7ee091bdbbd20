// Element-wise pieces of the transformer block.
#pragma once

#include <cstddef>

namespace kvscope::kernels::cpu {

// In place: x[i] = exp(x[i] - max) / sum_j exp(x[j] - max). Subtracting the
// maximum keeps large inputs finite; -infinity entries (masked) become 0.
// Needs n > 0 and at least one finite entry.
void softmax(float* x, std::size_t n);

// The SwiGLU FFN's gate: out[i] = silu(gate[i]) * up[i], where
// silu(g) = g / (1 + exp(-g)). out may alias gate or up.
// Runs on the SIMD path in use (simd_path.h).
void silu_mul(const float* gate, const float* up, float* out, std::size_t n);

#if defined(KVSCOPE_KERNELS_AVX2)
namespace detail {
void avx2_silu_mul(const float* gate, const float* up, float* out, std::size_t n);
} // namespace detail
#endif

} // namespace kvscope::kernels::cpu
