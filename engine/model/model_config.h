// The shape of a decoder-only transformer, read from GGUF metadata and
// checked against the file's tensors.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/kv/kv_geometry.h"
#include "engine/model/gguf_file.h"

namespace kvscope {

// How RoPE pairs the dimensions of a head it rotates together.
enum class RopeStyle {
    AdjacentPairs, // (x0, x1), (x2, x3), ...: llama's GGUF layout (ggml "normal" mode)
    NeoXHalves,    // (x[i], x[i + head_dim/2]): qwen2 (ggml "neox" mode)
};

std::string_view to_string(RopeStyle style); // "adjacent pairs", "neox halves"

// Context-extension scaling of RoPE positions ({arch}.rope.scaling.*).
struct RopeScaling {
    std::string type;                     // "linear", "yarn", ...
    double factor = 1.0;                  // positions are divided by this
    std::uint64_t original_context = 0;   // context the model was trained with; 0 if unknown
    // YaRN only (rope.scaling.yarn_*; llama.cpp's defaults where absent):
    // the rotations per context below which dimensions interpolate and
    // above which they extrapolate, and the log multiplier of its
    // magnitude scale (0: the plain 1 + 0.1 ln(factor)).
    double yarn_beta_fast = 32.0;
    double yarn_beta_slow = 1.0;
    double yarn_log_mul = 0.0;
};

// The FFN's gate activation: SwiGLU's silu(gate)·up, or GeGLU's
// gelu_tanh(gate)·up (Gemma).
// The FFN's gate activation: SwiGLU's silu(gate)·up, GeGLU's
// gelu_tanh(gate)·up (Gemma), or gpt-oss's clamped SwiGLU
// x·sigmoid(1.702 x)·(y + 1) with x = min(gate, 7), y = clamp(up, ±7).
enum class FfnActivation { SiLU, GeluTanh, SwiGluClamped };

std::string_view to_string(FfnActivation activation); // "silu", "gelu (tanh)", "clamped swiglu"

// How a mixture-of-experts router turns its logits into the weights of the
// experts it picks: qwen3moe takes the softmax over every expert, keeps the
// top k and rescales those to sum to 1; gpt-oss keeps the top k logits and
// takes the softmax over those k only.
enum class ExpertGating { SoftmaxTopKRenormalized, TopKSoftmax };

// A mixture-of-experts FFN: `count` expert FFNs of width `ffn_dim`
// (ffn_{gate,up,down}_exps, expert e being rows [e·ffn_dim, (e+1)·ffn_dim)
// of gate and up and the e-th slice of down), of which the router
// (ffn_gate_inp) picks `used` per token. count == 0: a dense FFN.
struct Experts {
    std::uint32_t count = 0;
    std::uint32_t used = 0;
    std::uint32_t ffn_dim = 0;
    ExpertGating gating = ExpertGating::SoftmaxTopKRenormalized;
    bool biases = false; // the router and every expert matrix have .bias tensors (gpt-oss)
};

// What one layer's attention does: how far back it sees and how it turns
// positions into angles. Most models have one kind of layer; Gemma mixes
// sliding-window and global layers, SmolLM3 leaves RoPE out of some.
struct LayerAttention {
    // 0: every earlier key (global attention); else keys less than `window`
    // positions back (a key is masked when query position - key position
    // >= window, as llama.cpp masks it).
    std::uint32_t window = 0;
    bool rope = true;         // false: this layer rotates nothing (NoPE)
    double rope_theta = 0;    // this layer's RoPE base
    bool rope_scaled = false; // the model's RoPE scaling applies to this layer

    bool operator==(const LayerAttention&) const = default;
};

struct ModelConfig {
    // "llama", "qwen2", "qwen3", "qwen3moe", "gemma2", "gemma3", "phi3",
    // "smollm3" or "gpt-oss"
    // (model_families.h says what each one adds).
    std::string architecture;
    std::string name;         // general.name, may be empty
    std::uint32_t n_layers = 0;
    std::uint32_t embedding_dim = 0;
    std::uint32_t n_heads = 0;
    std::uint32_t n_kv_heads = 0; // divides n_heads (grouped-query attention)
    // From attention.key_length where given: n_heads × head_dim may differ
    // from embedding_dim (Qwen3-0.6B: 16 × 128 on a 1024-wide model).
    std::uint32_t head_dim = 0;
    std::uint32_t rope_dims = 0;  // dimensions of a head RoPE rotates; < head_dim: partial rotary (Phi-4-mini)
    std::uint32_t ffn_dim = 0;
    std::uint32_t vocab_size = 0;
    std::uint32_t context_length = 0;
    double rope_theta = 10000.0;  // the base of global layers (LayerAttention has each layer's)
    std::optional<RopeScaling> rope_scaling;
    RopeStyle rope_style = RopeStyle::AdjacentPairs;
    // Per-pair divisors of RoPE frequencies: rope_freqs.weight (Llama 3.1),
    // or Phi-3's LongRoPE rope_factors_long/short, of which the one for this
    // context is used (llama.cpp's rule: long when context_length exceeds
    // the scaling's original context).
    bool rope_freq_factors = false;
    bool long_rope = false;        // LongRoPE: rope_factors_long applies, else rope_factors_short
    double rope_attn_factor = 1.0; // rope.scaling.attn_factor: cos and sin are multiplied by it (LongRoPE)
    double norm_eps = 1e-5;   // RMSNorm epsilon
    bool tied_embeddings = false; // no output.weight: logits use token_embd.weight
    bool qkv_bias = false;        // attn_q/k/v have .bias tensors
    bool output_bias = false;     // attn_output has a .bias tensor (gpt-oss)

    // Beyond llama: the features of model_families.h, each false/0 for llama.
    bool fused_qkv = false;       // one attn_qkv matrix: Q, K and V rows in turn (Phi-3)
    bool fused_gate_up = false;   // one ffn_up matrix of 2·ffn_dim rows: gate, then up (Phi-3)
    bool qk_norm = false;         // per-head RMSNorm of Q and K before RoPE (attn_q_norm, attn_k_norm)
    bool post_norms = false;      // RMSNorm of each sublayer's output before the residual add (Gemma)
    FfnActivation ffn_activation = FfnActivation::SiLU;
    double embedding_scale = 1.0; // token embeddings are multiplied by it (Gemma: sqrt(width))
    double attention_scale = 0.0; // multiplies q·k; 0: 1/sqrt(head_dim)
    double attn_softcap = 0.0;    // > 0: scores become cap·tanh(score/cap) (Gemma 2)
    double final_softcap = 0.0;   // > 0: the same for the output logits
    // Attention sinks (gpt-oss, attn_sinks): one logit per query head that
    // joins the softmax's denominator with no value, so a head can attend
    // to nothing.
    bool attn_sinks = false;
    Experts experts;              // count 0: a dense FFN
    std::vector<LayerAttention> layers; // n_layers entries

    bool is_moe() const { return experts.count > 0; }
    // The FFN's width a token runs through: an expert's for a MoE model.
    std::uint32_t token_ffn_dim() const { return is_moe() ? experts.ffn_dim : ffn_dim; }
    // The per-layer tensor of the FFN's input norm: "ffn_norm.weight", or
    // gpt-oss's "post_attention_norm.weight" (its checkpoint's name).
    std::string_view ffn_norm_tensor() const;
    std::uint32_t q_dim() const { return n_heads * head_dim; }
    std::uint32_t kv_dim() const { return n_kv_heads * head_dim; }
    KvGeometry kv_geometry() const { return {n_layers, n_kv_heads, head_dim}; }
    std::vector<std::uint32_t> layer_windows() const; // layers[l].window, every layer
    // True when some layer attends within a window.
    bool has_windows() const;
    // The layers by kind, for people: "26 layers: 22 sliding-window (512),
    // 4 global" or "28 layers, all global".
    std::string layer_kinds() const;
    // What the model computes beyond llama's decoder, for people: "QK-norm,
    // post-norms, GELU (tanh) FFN, attention soft-cap 50"; "none" for llama.
    std::string features() const;
};

// Reads the configuration of a model of one of the architectures of
// model_families.h (llama also covers Mistral and TinyLlama) and checks that
// every tensor the forward pass needs is present with the right shape and a
// dequantizable type (1-D norms and biases must be F32). Throws
// kvscope::Error naming the file and the problem; any other architecture
// gives "unsupported architecture X" with the list of supported ones.
ModelConfig read_model_config(const GgufFile& file);

// Name of a per-layer tensor: block_tensor_name(3, "attn_q.weight") is
// "blk.3.attn_q.weight".
std::string block_tensor_name(std::uint32_t layer, std::string_view suffix);

} // namespace kvscope
