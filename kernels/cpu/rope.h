// Rotary position embedding, in place.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace kvscope::kernels::cpu {

// Which dimensions form the rotated pairs.
enum class RopeStyle {
    AdjacentPairs, // (x[2i], x[2i+1]): llama, mistral (ggml's "normal" mode)
    Halves,        // (x[i], x[i + rot_dim/2]): gpt-neox, qwen2, phi (ggml's "neox" mode;
                   // partial: pairs within the first rot_dim values, as ggml's n_dims,
                   // e.g. Phi-4-mini's 96 of 128)
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
// How a model turns positions into angles beyond the plain base, as
// ggml's rope (ggml-cpu ops.cpp, rope_yarn with ext_factor 0: no YaRN
// ramp) combines them: for pair i, with theta_i = theta_base^(-2i / rot_dim),
//   angle_i = position * theta_i / factors[i] * freq_scale,
//   table  = attn_factor * cos(angle_i), attn_factor * sin(angle_i).
// The defaults make it the plain rotation, bit for bit.
struct RopeFrequencies {
    float theta_base = 10000.0f;
    // Linear position scaling (ggml's freq_scale, 1 / the scaling factor).
    float freq_scale = 1.0f;
    // rot_dim / 2 per-pair divisors of theta_i (ggml's freq_factors: Llama
    // 3.1's rope_freqs, Phi-3's LongRoPE rope_factors_long/short), or
    // nullptr for all 1.
    const float* factors = nullptr;
    // cos and sin are both multiplied by it (ggml's attn_factor, the
    // mscale LongRoPE's caller computes).
    float attn_factor = 1.0f;
};

// rope_angles with those frequencies; the overload above is
// RopeFrequencies{theta_base}. The angles are computed in double, as
// rope() does; ggml computes theta_i in float by repeated multiplication
// with powf(theta_base, -2 / rot_dim), cos and sin with cosf and sinf, so
// llama.cpp's table differs from this one by up to ~7e-5 below position
// 512, ~6e-4 below 4096 and ~5e-3 below 32768 (base 1e4, rot_dim 128;
// less for smaller rot_dim or larger bases), the error of its float angles.
// Throws std::invalid_argument unless rot_dim is even, theta_base and
// freq_scale are finite and > 0, each factor is finite and > 0, and
// attn_factor is finite.
void rope_angles(const std::uint32_t* positions, std::size_t count, std::size_t rot_dim,
                 const RopeFrequencies& frequencies, std::vector<float>& table);

// rope_rotate: rope() with one position's row of that table. Throws
// std::invalid_argument unless rot_dim is even and <= head_dim.
void rope_rotate(float* x, std::size_t n_heads, std::size_t head_dim, std::size_t rot_dim, const float* cos_sin,
                 RopeStyle style);

} // namespace kvscope::kernels::cpu
