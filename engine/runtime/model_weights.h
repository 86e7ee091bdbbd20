#pragma once

#include <cstddef>
#include <vector>

#include "engine/model/gguf_file.h"
#include "engine/model/model_config.h"
#include "kernels/cpu/packed_weights.h"
#include "kernels/cpu/weight_type.h"

namespace kvscope {

// A weight matrix as it lies in the mapped GGUF file: `rows` rows of `cols`
// values in a ggml block format. Never expanded; the CPU forward pass reads
// it repacked into tiles (`packed`, see Model::cpu_weights) when the CPU
// has tile kernels for its type.
struct WeightMatrix {
    kernels::cpu::WeightType type = kernels::cpu::WeightType::F32;
    const void* data = nullptr;
    std::size_t rows = 0;
    std::size_t cols = 0;
    std::size_t row_bytes = 0;
    const kernels::cpu::PackedWeights* packed = nullptr; // null: read `data`
};

// A mixture-of-experts layer's router and experts (ModelConfig::experts).
// Expert e's gate and up are rows [e·ffn, (e+1)·ffn) of the 3-D
// ffn_{gate,up}_exps seen as 2-D, its down rows [e·dim, (e+1)·dim) of
// ffn_down_exps: views into the file, like a fused tensor's parts. Empty
// for a dense layer.
struct ExpertWeights {
    WeightMatrix router;                // count rows of embedding_dim
    const float* router_bias = nullptr; // count floats (gpt-oss)
    std::vector<WeightMatrix> gate, up, down; // one per expert
    // Expert e's biases (gpt-oss): ffn floats at e·ffn (gate, up), dim
    // floats at e·dim (down).
    const float* gate_bias = nullptr;
    const float* up_bias = nullptr;
    const float* down_bias = nullptr;

    std::size_t count() const { return gate.size(); }
};

class ExpertPacks;

// One layer's weights; a pointer is null where the model's features
// (ModelConfig) leave the tensor out. A fused tensor's parts are matrices
// of their own over its rows.
struct LayerWeights {
    const float* attn_norm = nullptr;
    WeightMatrix q, k, v, o;
    const float* q_bias = nullptr; // qwen2
    const float* k_bias = nullptr;
    const float* v_bias = nullptr;
    const float* q_norm = nullptr; // head_dim floats: qwen3, gemma3
    const float* k_norm = nullptr;
    const float* o_bias = nullptr;  // gpt-oss
    const float* sinks = nullptr;   // n_heads floats: attention sinks (gpt-oss)
    const float* attn_post_norm = nullptr; // gemma
    const float* ffn_norm = nullptr;
    WeightMatrix gate, up, down;   // a dense FFN's
    ExpertWeights experts;         // a MoE FFN's
    const float* ffn_post_norm = nullptr; // gemma
};

// Pointers into a GgufFile's tensors, checked against the config
// (read_model_config has validated names, shapes and types). The file must
// outlive this object.
struct ModelWeights {
    WeightMatrix token_embd;
    WeightMatrix output; // token_embd when the embeddings are tied
    const float* output_norm = nullptr;
    std::uint32_t experts_used = 0; // per token, per MoE layer (ModelConfig::experts)
    // rope_dims / 2 divisors of RoPE's frequencies (rope_freqs, or the
    // LongRoPE factors for the config's context), or nullptr.
    const float* rope_factors = nullptr;
    std::vector<LayerWeights> layers;
    // The experts' packed copies, made as the router first picks each
    // (expert_packs.h); null: the experts are read as the file holds them.
    const ExpertPacks* expert_packs = nullptr;

    ModelWeights(const GgufFile& file, const ModelConfig& config);
    // Bytes of all weights a decode step reads (every matrix once, packed
    // where it is, the embedding row aside; of a MoE layer the router and
    // `used` experts' matrices): the memory-bandwidth cost of one token.
    std::size_t bytes_read_per_token() const;
};

} // namespace kvscope
