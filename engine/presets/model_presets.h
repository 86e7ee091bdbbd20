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

// A LLaMA-family decoder's shape, as its config.json / GGUF metadata gives it.
struct ModelGeometry {
    std::string name;
    std::string architecture; // "llama" or "qwen2"
    std::uint32_t dim = 0;
    std::uint32_t n_layers = 0;
    std::uint32_t n_heads = 0;
    std::uint32_t n_kv_heads = 0;
    std::uint32_t ffn_dim = 0;
    std::uint32_t vocab = 0;
    std::uint32_t context = 0;
    bool tied_embeddings = false;
    bool qkv_bias = false;

    std::uint32_t head_dim() const { return dim / n_heads; }
    KvGeometry kv() const { return {n_layers, n_kv_heads, head_dim()}; }
    // Weights of embedding, attention, FFN, norms (and QKV biases, and the
    // output matrix unless tied), counted from the shape.
    std::uint64_t parameters() const;
};

std::span<const ModelGeometry> model_presets();
// Throws kvscope::Error listing the known names.
const ModelGeometry& find_model_preset(std::string_view name);

} // namespace kvscope
