// A Gemma 3 of the smallest shape that still has both kinds of layer:
// 6 layers (5 with a sliding window of 16 tokens, then a global one),
// 64 wide, 2 query heads and 1 KV head of 32, a 300-token vocabulary.
// Random weights (make-model's generator): for tests of the hybrid KV
// cache that run many requests and need the forward pass to be cheap.
#pragma once

#include <string>

#include "engine/model/synthetic_model.h"
#include "engine/presets/model_presets.h"

namespace kvscope::test {

inline constexpr std::uint32_t kTinyHybridWindow = 16;

inline ModelGeometry tiny_hybrid_geometry() {
    ModelGeometry g = find_model_preset("gemma3-270m");
    g.name = "tiny hybrid gemma3";
    g.dim = 64;
    g.n_layers = 6;
    g.n_heads = 2;
    g.n_kv_heads = 1;
    g.explicit_head_dim = 32;
    g.ffn_dim = 64;
    g.vocab = 300;
    g.context = 1024;
    g.sliding_window = kTinyHybridWindow;
    g.query_pre_attn_scalar = 0;
    return g;
}

// Writes it to `path` in F16 and returns the path.
inline std::string write_tiny_hybrid_model(const std::string& path) {
    write_synthetic_model(tiny_hybrid_geometry(), GgmlType::F16, 11, path);
    return path;
}

} // namespace kvscope::test
