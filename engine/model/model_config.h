// The shape of a decoder-only transformer, read from GGUF metadata and
// checked against the file's tensors.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

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
};

struct ModelConfig {
    std::string architecture; // "llama" or "qwen2"
    std::string name;         // general.name, may be empty
    std::uint32_t n_layers = 0;
    std::uint32_t embedding_dim = 0;
    std::uint32_t n_heads = 0;
    std::uint32_t n_kv_heads = 0; // divides n_heads (grouped-query attention)
    std::uint32_t head_dim = 0;   // RoPE rotates all of it
    std::uint32_t ffn_dim = 0;
    std::uint32_t vocab_size = 0;
    std::uint32_t context_length = 0;
    double rope_theta = 10000.0;
    std::optional<RopeScaling> rope_scaling;
    RopeStyle rope_style = RopeStyle::AdjacentPairs;
    // rope_freqs.weight holds per-dimension frequency factors (Llama 3.1).
    bool rope_freq_factors = false;
    double norm_eps = 1e-5;   // RMSNorm epsilon
    bool tied_embeddings = false; // no output.weight: logits use token_embd.weight
    bool qkv_bias = false;        // attn_q/k/v have .bias tensors

    std::uint32_t q_dim() const { return n_heads * head_dim; }
    std::uint32_t kv_dim() const { return n_kv_heads * head_dim; }
    KvGeometry kv_geometry() const { return {n_layers, n_kv_heads, head_dim}; }
};

// Reads the configuration of a `llama` (also Mistral, TinyLlama) or `qwen2`
// model and checks that every tensor the forward pass needs is present with
// the right shape and a dequantizable type (1-D norms and biases must be
// F32). Throws kvscope::Error naming the file and the problem; any other
// architecture gives "unsupported architecture X".
ModelConfig read_model_config(const GgufFile& file);

// Name of a per-layer tensor: block_tensor_name(3, "attn_q.weight") is
// "blk.3.attn_q.weight".
std::string block_tensor_name(std::uint32_t layer, std::string_view suffix);

} // namespace kvscope
