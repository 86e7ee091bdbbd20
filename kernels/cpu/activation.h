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
// Runs on the SIMD path in use (simd_path.h), on up to `threads` threads
// (parallel.h) for a long vector (a prompt's FFN rows), cut into pieces of
// whole 8-value vectors: the result does not depend on the count.
void silu_mul(const float* gate, const float* up, float* out, std::size_t n, int threads = 1);

// The GeGLU FFN's gate (Gemma 2 and 3): out[i] = gelu(gate[i]) * up[i],
// gelu the tanh approximation g/2 (1 + tanh(sqrt(2/pi) (g + 0.044715 g^3))),
// rounded as llama.cpp's CPU backend rounds it: ggml-cpu/vec.h defines
// GGML_GELU_FP16 in this snapshot (0ad4a86), so its GEGLU reads gelu from a
// table of f16 results at f16 inputs: gate rounded to f16, gelu of that in
// float, rounded to f16, times up (a gate <= -10 gives 0, >= 10 gives
// gate * up, unrounded). Those roundings are kept here (gelu.h), so the
// result is within ~2^-10 relative of the exact GELU times up, as
// llama.cpp's. gelu itself is evaluated as g * sigmoid(2u), the same
// function without the cancellation of 1 + tanh(u) for u well below 0:
// over every f16 input in (-10, 10), against a replay of llama.cpp's table
// (glibc tanhf), 99.3% of the results are the same f16 value on both SIMD
// paths and the rest one or two f16 steps apart (at most 1.3e-4), all but 5
// of them below -2, where the replay is the less exact of the two (ours is
// the exact gelu rounded to f16). out may alias gate or up. Runs on the
// SIMD path in use, on up to `threads` threads as silu_mul.
void gelu_mul(const float* gate, const float* up, float* out, std::size_t n, int threads = 1);

// gpt-oss's clamped SwiGLU (llama.cpp's swiglu_oai, alpha 1.702, limit 7):
// out[i] = x sigmoid(1.702 x) (y + 1) with x = min(gate[i], 7) and
// y = clamp(up[i], -7, 7). Portable code (std::exp, as llama.cpp's expf):
// a MoE step runs it over only the routed experts' rows, a small share of
// the step. out may alias gate or up; up to `threads` threads as silu_mul.
void swiglu_clamped_mul(const float* gate, const float* up, float* out, std::size_t n, int threads = 1);
// Soft-capping in place, as llama.cpp's Gemma 2 final logits:
// x[i] = cap * tanh(x[i] * (1 / cap)). Runs on the SIMD path in use (AVX2,
// NEON: a polynomial tanh within a few ulp of std::tanh). Throws
// std::invalid_argument unless cap is finite and > 0.
void softcap(float* x, std::size_t n, float cap);

#if defined(KVSCOPE_KERNELS_AVX2)
namespace detail {
void avx2_silu_mul(const float* gate, const float* up, float* out, std::size_t n);
void avx2_gelu_mul(const float* gate, const float* up, float* out, std::size_t n);
void avx2_softcap(float* x, std::size_t n, float cap);
} // namespace detail
#endif
#if defined(KVSCOPE_KERNELS_NEON)
namespace detail {
void neon_silu_mul(const float* gate, const float* up, float* out, std::size_t n);
void neon_gelu_mul(const float* gate, const float* up, float* out, std::size_t n);
void neon_softcap(float* x, std::size_t n, float cap);
} // namespace detail
#endif

} // namespace kvscope::kernels::cpu
