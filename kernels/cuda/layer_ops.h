// The element-wise and per-row steps of a transformer layer on the GPU,
// twins of kernels/cpu's rms_norm, rope and silu_mul, plus the embedding
// lookup. Pointers are device memory; launches are queued on `stream`.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/cpu/rope.h"
#include "kernels/cuda/cuda_error.h"

namespace kvscope::kernels::cuda {

// n_rows rows of n floats: out[r][i] = x[r][i] / sqrt(mean_i(x[r]^2) + eps)
// * weight[i]. out may alias x.
void rms_norm(const float* x, const float* weight, std::uint32_t n_rows, std::uint32_t n, float eps, float* out,
              Stream stream = nullptr);

// In place on n_tokens x n_heads x head_dim floats: token t's heads are
// rotated by the angle positions[t] * theta_base^(-2i / rot_dim) per pair
// i < rot_dim / 2, pairs formed as `style` says (cpu::rope's definition;
// angles in double there and here). Throws std::invalid_argument unless
// rot_dim is even and <= head_dim.
void rope(float* x, const std::uint32_t* positions, std::uint32_t n_tokens, std::uint32_t n_heads,
          std::uint32_t head_dim, std::uint32_t rot_dim, float theta_base, cpu::RopeStyle style,
          Stream stream = nullptr);

// out[i] = silu(gate[i]) * up[i], silu(g) = g / (1 + exp(-g)). out may
// alias gate or up.
void silu_mul(const float* gate, const float* up, float* out, std::size_t n, Stream stream = nullptr);

// Element type of an embedding table kept on the device.
enum class EmbeddingType { F32, F16 };

// out[t] = row tokens[t] of an n_vocab x dim table, widened to f32. A token
// id >= n_vocab gives a row of NaN (the engine checks ids on the host; the
// kernel only keeps a bad one from reading outside the table).
void embedding_rows(const void* table, EmbeddingType type, std::uint32_t n_vocab, std::uint32_t dim,
                    const std::uint32_t* tokens, std::uint32_t n_tokens, float* out, Stream stream = nullptr);

} // namespace kvscope::kernels::cuda
