// Rotary position embedding, in place.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace kvscope::kernels::cpu {

// Which dimensions form the rotated pairs.
enum class RopeStyle {
    AdjacentPairs, // (x[2i], x[2i+1]): llama, mistral (ggml's "normal" mode)
    Halves,        // (x[i], x[i + rot_dim/2]): gpt-neox, qwen2, phi (ggml's "neox" mode)
};

// For each of n_heads heads of head_dim values at x, rotates pair i
// (i < rot_dim / 2) by the angle position * theta_base^(-2i / rot_dim):
//   a' = a cos - b sin,  b' = a sin + b cos.
// Dimensions from rot_dim on are left alone (partial rotary). Angles are
// computed in double so that large positions keep full float accuracy.
// Throws std::invalid_argument unless rot_dim is even and <= head_dim.
void rope(float* x, std::size_t n_heads, std::size_t head_dim, std::size_t rot_dim,
          std::uint32_t position, float theta_base, RopeStyle style);

// The same rotation in two parts, so that a forward pass computes the
// angles once for its tokens and every layer's q and k reuse them (the
// sines and cosines cost far more than the rotation itself).
//
// rope_angles: for each positions[t], t < count, rot_dim floats at
// table + t * rot_dim: the cos and sin of each pair's angle, pair i at
// [2i, 2i + 1]. Throws std::invalid_argument unless rot_dim is even.
// (No std::span: nvcc compiles this header as C++17, for RopeStyle.)
void rope_angles(const std::uint32_t* positions, std::size_t count, std::size_t rot_dim, float theta_base,
                 std::vector<float>& table);
// rope_rotate: rope() with one position's row of that table. Throws
// std::invalid_argument unless rot_dim is even and <= head_dim.
void rope_rotate(float* x, std::size_t n_heads, std::size_t head_dim, std::size_t rot_dim, const float* cos_sin,
                 RopeStyle style);

} // namespace kvscope::kernels::cpu
