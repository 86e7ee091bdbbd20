// engine/presets: published geometries of well-known models and memory sizes
// of well-known accelerators, for the KV memory calculator and for building
// random-weight models of a real shape. Plain data; depends on engine/kv.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "engine/kv/kv_layout.h"

namespace kvscope {

// A decoder's shape, as its config.json gives it and its GGUF metadata (as
// llama.cpp's convert_hf_to_gguf.py writes it) says it. Every number with a
// default is one the llama-shaped presets do not set. What an architecture
// always has (QK-norm, Gemma's extra norms, Phi-3's fused matrices, gpt-oss's
// biases and attention sinks) follows from `architecture` (the has_*
// functions), so no geometry can contradict its architecture.
struct ModelGeometry {
    std::string name;
    // GGUF general.architecture: "llama", "qwen2", "qwen3", "gemma3",
    // "gemma2", "phi3", "smollm3", or the mixture-of-experts "qwen3moe" and
    // "gpt-oss".
    std::string architecture;
    std::uint32_t dim = 0;
    std::uint32_t n_layers = 0;
    std::uint32_t n_heads = 0;
    std::uint32_t n_kv_heads = 0; // divides n_heads
    // config.json's intermediate_size (feed_forward_length): the dense FFN's
    // width. A mixture-of-experts model whose every layer is experts (both
    // here) carries it in its file but runs expert_ffn_dim.
    std::uint32_t ffn_dim = 0;
    std::uint32_t vocab = 0;
    std::uint32_t context = 0;
    bool tied_embeddings = false; // no output matrix: logits use token_embd
    bool qkv_bias = false;

    // config.json's head_dim (GGUF attention.key_length/value_length); 0:
    // dim / n_heads. Qwen3-0.6B: 16 heads of 128 on a 1024-wide model.
    std::uint32_t explicit_head_dim = 0;
    double norm_eps = 1e-5; // RMSNorm epsilon
    double rope_theta = 10000.0;
    // Dimensions of a head RoPE rotates (rope.dimension_count); 0: all.
    // Phi-4-mini rotates 96 of 128 (partial_rotary_factor 0.75).
    std::uint32_t rope_dims = 0;
    // Linear RoPE scaling (rope.scaling.type "linear"): positions divided by
    // this, on the global layers only where there are window layers. 1:
    // none. Gemma 3 4B: 8.
    double rope_linear_factor = 1.0;
    // LongRoPE (Phi-3/4): per rotated pair, the frequency divisors for
    // contexts beyond `rope_original_context` (long) and within it (short);
    // rope_dims / 2 each, or both empty.
    std::span<const float> rope_factors_long{};
    std::span<const float> rope_factors_short{};
    std::uint32_t rope_original_context = 0; // rope.scaling.original_context_length; 0: none
    // YaRN RoPE scaling (rope.scaling.type "yarn"): a context stretched by
    // this factor beyond rope_original_context, the low frequencies
    // interpolated, the high ones kept, the rotation's magnitude raised by
    // 1 + 0.1 ln(factor). 1: none. gpt-oss: 32 over 4096.
    double rope_yarn_factor = 1.0;

    // Sliding-window attention: a window layer's query at position p sees
    // keys at positions > p - sliding_window. 0: no window. Which layers, as
    // llama.cpp's set_swa_pattern(swa_period) has it: layer l is a window
    // layer when l % swa_period < swa_period - 1 (6: five window layers,
    // then a global one; 2: alternate, starting with a window layer; 0:
    // every layer).
    std::uint32_t sliding_window = 0;
    std::uint32_t swa_period = 0;
    double rope_theta_swa = 0.0; // window layers' RoPE base (rope.freq_base_swa); 0: rope_theta
    // SmolLM3: layer l has no RoPE when (l + 1) % no_rope_period == 0. 0: RoPE everywhere.
    std::uint32_t no_rope_period = 0;
    // Gemma 2: cap * tanh(x / cap) on attention logits and on the final logits. 0: none.
    double attn_softcap = 0.0;
    double final_softcap = 0.0;
    // Gemma: queries scaled by 1/sqrt(query_pre_attn_scalar); 0: head_dim.
    std::uint32_t query_pre_attn_scalar = 0;

    // Mixture of experts (expert_count, expert_used_count,
    // expert_feed_forward_length): every layer's FFN is n_experts FFNs of
    // expert_ffn_dim, a router (ffn_gate_inp) picking n_experts_used of
    // them per token. 0: a dense FFN of ffn_dim. Invariant where nonzero:
    // 1 <= n_experts_used <= n_experts.
    std::uint32_t n_experts = 0;
    std::uint32_t n_experts_used = 0;
    std::uint32_t expert_ffn_dim = 0;

    std::uint32_t head_dim() const { return explicit_head_dim ? explicit_head_dim : dim / n_heads; }
    std::uint32_t q_dim() const { return n_heads * head_dim(); }
    std::uint32_t kv_dim() const { return n_kv_heads * head_dim(); }
    std::uint32_t rotated_dims() const { return rope_dims ? rope_dims : head_dim(); }
    // Every layer caches n_kv_heads x head_dim per token in these families;
    // which layers see only a window is is_window_layer's.
    KvGeometry kv() const { return {n_layers, n_kv_heads, head_dim()}; }

    // Whether the layer attends within sliding_window as llama.cpp (and
    // read_model_config) runs it: never for phi3, whose window is ignored.
    bool is_window_layer(std::uint32_t layer) const;
    bool uses_rope(std::uint32_t layer) const;
    bool is_moe() const { return n_experts != 0; }
    bool has_qk_norm() const;      // attn_q_norm, attn_k_norm (head_dim each): qwen3, qwen3moe, gemma3
    bool has_post_norms() const;   // post_attention_norm, post_ffw_norm: gemma2, gemma3
    bool has_fused_matrices() const; // attn_qkv and ffn_up holding gate and up: phi3
    bool has_longrope() const { return !rope_factors_long.empty(); }
    bool has_yarn() const { return rope_yarn_factor != 1.0; }
    // A bias on every matrix but the embedding and the output: Q, K, V, O,
    // the router and each expert's gate, up and down (gpt-oss).
    bool has_biases() const { return architecture == "gpt-oss"; }
    bool has_qkv_bias() const { return qkv_bias || has_biases(); }
    // attn_sinks: one logit per query head joining the softmax's denominator
    // with no value (gpt-oss).
    bool has_attention_sinks() const { return architecture == "gpt-oss"; }

    // Weights of embedding, attention, FFN (every expert), norms (biases,
    // QK-norms, post-norms, sinks, LongRoPE factors, and the output matrix
    // unless tied), counted from the shape: exactly what
    // write_synthetic_model writes.
    std::uint64_t parameters() const;
    // The weights one token's forward pass reads: one row of the embedding,
    // the router and n_experts_used experts of each layer, everything else
    // whole (the output matrix, or the tied embedding as output). A dense
    // model's is parameters() less vocab - 1 embedding rows (untied).
    std::uint64_t active_parameters() const;
};

// What make-model --layers/--vocab/--window/--ffn/--experts take out of a preset so
// a test runs in seconds; 0 keeps the preset's. The result is no real
// model's shape, but every architectural feature stays: the first `layers`
// layers keep their kinds (window or global, RoPE or not), and a window
// shrunk to a few dozen tokens is crossed by a short prompt.
struct GeometryCut {
    std::uint32_t layers = 0; // 1 .. the preset's
    std::uint32_t vocab = 0;  // 260 (the placeholder vocabulary's specials and bytes, and one more) .. the preset's
    std::uint32_t window = 0; // 1 .. ; only for a preset with window layers
    // 32 .. the preset's, a multiple of 32 (a quantization block). A
    // mixture-of-experts preset's experts' width (and its unused dense one).
    std::uint32_t ffn = 0;
    // The preset's n_experts_used .. n_experts: the first `experts` experts,
    // each token still routed to n_experts_used; only for a MoE preset.
    std::uint32_t experts = 0;
    // 1 .. the preset's: the context_length written. Phi-3's LongRoPE
    // factors follow it (long beyond the original context, as llama.cpp
    // picks them for its n_ctx), so a test comparing with a short llama.cpp
    // run cuts it to the original context.
    std::uint32_t context = 0;
};
// Also names the cut in the result's name ("gemma3-270m, 3 of 18 layers,
// ..."). Throws kvscope::Error naming the option out of range.
ModelGeometry cut_geometry(const ModelGeometry& preset, const GeometryCut& cut);

std::span<const ModelGeometry> model_presets();
// Throws kvscope::Error listing the known names.
const ModelGeometry& find_model_preset(std::string_view name);

} // namespace kvscope
