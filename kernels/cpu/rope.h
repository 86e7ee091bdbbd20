// Rotary position embedding, in place.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
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
// YaRN (rope.scaling.type "yarn": gpt-oss, DeepSeek, long-context Qwen),
// described by the GGUF's own rope.scaling.* values; the scaling factor
// s is RopeFrequencies::freq_scale = 1 / rope.scaling.factor, as for
// linear scaling. rope_angles then computes what llama.cpp does with
// ext_factor 1 (llama-context.cpp's value for "yarn"; only Grok's GGUFs
// name another), beta_fast and beta_slow as given (32 and 1 when the
// GGUF has no yarn_beta_fast / yarn_beta_slow): for rot_dim n, base b,
// pair i and original context L,
//   corr(beta) = n ln(L / (2 pi beta)) / (2 ln b)
//   low  = max(0, floor(corr(beta_fast))), high = min(n - 1, ceil(corr(beta_slow)))
//          (ggml_rope_yarn_corr_dims; in float as ggml, so that the same
//          integers come out)
//   ramp_i = 1 - clamp((i - low) / max(0.001, high - low), 0, 1)   (rope_yarn_ramp)
//   angle_i = position * theta_i / factors[i] * (freq_scale (1 - ramp_i) + ramp_i)
// so pairs i <= low keep their trained frequency (extrapolation), pairs
// i >= high are interpolated as linear scaling would, and the pairs
// between blend the two (rope_yarn). cos and sin are multiplied by
//   attn_factor * m(s, 1) / m(s, log_mul)   (log_mul 0: / 1),
//   m(s, k) = s <= 1 ? 1 : 1 + 0.1 k ln s,
// the net of llama.cpp's three factors: llama_context's yarn_attn_factor
// (that ratio, times 1 / (1 + 0.1 ln s) to cancel the next one, times
// rope.scaling.attn_factor) and rope_yarn's own mscale, 1 + 0.1 ln s. For
// gpt-oss (s = 32, no log_mul, no attn_factor): 1 + 0.1 ln 32 = 1.34657.
// (llama.cpp's DeepSeek-V2 alone puts log_mul in the numerator too, which
// makes the ratio 1; a caller for it would pass log_mul 0 and
// attn_factor / m(s, 1).)
struct RopeYarn {
    // rope.scaling.original_context_length (ggml's n_ctx_orig): > 0.
    std::uint32_t original_context = 0;
    // rope.scaling.yarn_beta_fast and yarn_beta_slow: finite, > 0.
    float beta_fast = 32.0f;
    float beta_slow = 1.0f;
    // rope.scaling.yarn_log_multiplier (DeepSeek's mscale_all_dim), 0 when
    // the GGUF has none: finite.
    float log_mul = 0.0f;
};

// How a model turns positions into angles beyond the plain base, as
// ggml's rope (ggml-cpu ops.cpp, rope_yarn) combines them: for pair i,
// with theta_i = theta_base^(-2i / rot_dim) and no YaRN (ext_factor 0),
//   angle_i = position * theta_i / factors[i] * freq_scale,
//   table  = attn_factor * cos(angle_i), attn_factor * sin(angle_i);
// with `yarn`, as RopeYarn says. The defaults make it the plain rotation,
// bit for bit.
struct RopeFrequencies {
    float theta_base = 10000.0f;
    // Linear position scaling (ggml's freq_scale, 1 / the scaling factor).
    float freq_scale = 1.0f;
    // rot_dim / 2 per-pair divisors of theta_i (ggml's freq_factors: Llama
    // 3.1's rope_freqs, Phi-3's LongRoPE rope_factors_long/short), or
    // nullptr for all 1.
    const float* factors = nullptr;
    // cos and sin are both multiplied by it (rope.scaling.attn_factor:
    // ggml's attn_factor, the mscale LongRoPE's caller computes; with YaRN
    // one factor of the magnitude RopeYarn states).
    float attn_factor = 1.0f;
    // YaRN's ramp and magnitude (rope.scaling.type "yarn"), or none.
    std::optional<RopeYarn> yarn = std::nullopt;
};

// rope_angles with those frequencies; the overload above is
// RopeFrequencies{theta_base}. The angles are computed in double, as
// rope() does; ggml computes theta_i in float by repeated multiplication
// with powf(theta_base, -2 / rot_dim), cos and sin with cosf and sinf, so
// llama.cpp's table differs from this one by up to ~7e-5 below position
// 512, ~6e-4 below 4096 and ~5e-3 below 32768 (base 1e4, rot_dim 128;
// less for smaller rot_dim or larger bases), the error of its float angles.
// Throws std::invalid_argument unless rot_dim is even, theta_base and
// freq_scale are finite and > 0, each factor is finite and > 0,
// attn_factor is finite, and a RopeYarn's fields are as it states.
void rope_angles(const std::uint32_t* positions, std::size_t count, std::size_t rot_dim,
                 const RopeFrequencies& frequencies, std::vector<float>& table);

// rope_rotate: rope() with one position's row of that table. Throws
// std::invalid_argument unless rot_dim is even and <= head_dim.
void rope_rotate(float* x, std::size_t n_heads, std::size_t head_dim, std::size_t rot_dim, const float* cos_sin,
                 RopeStyle style);

} // namespace kvscope::kernels::cpu
