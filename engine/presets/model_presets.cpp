#include "engine/presets/model_presets.h"

#include <array>

#include "engine/core/error.h"

namespace kvscope {
namespace {

// From each model's published config.json (Hugging Face).
const std::array kModels{
    //            name            arch     dim  layers heads kv  ffn    vocab   context tied   qkv_bias
    ModelGeometry{"llama-110m",     "llama", 768,  12, 12, 12, 2048,  32000,  1024,   true,  false},
    // llama-110m's smaller siblings (llama2.c's stories42M and stories15M):
    // synthetic models that run in seconds. llama-110m stays first, the
    // start page's and the calculator's default.
    ModelGeometry{"llama-42m",      "llama", 512,  8,  8,  8,  1376,  32000,  1024,   true,  false},
    ModelGeometry{"llama-15m",      "llama", 288,  6,  6,  6,  768,   32000,  256,    true,  false},
    ModelGeometry{"tinyllama-1.1b", "llama", 2048, 22, 32, 4,  5632,  32000,  2048,   false, false},
    ModelGeometry{"llama-2-7b",     "llama", 4096, 32, 32, 32, 11008, 32000,  4096,   false, false},
    ModelGeometry{"llama-2-13b",    "llama", 5120, 40, 40, 40, 13824, 32000,  4096,   false, false},
    ModelGeometry{"llama-2-70b",    "llama", 8192, 80, 64, 8,  28672, 32000,  4096,   false, false},
    ModelGeometry{"llama-3-8b",     "llama", 4096, 32, 32, 8,  14336, 128256, 8192,   false, false},
    ModelGeometry{"llama-3-70b",    "llama", 8192, 80, 64, 8,  28672, 128256, 8192,   false, false},
    ModelGeometry{"mistral-7b",     "llama", 4096, 32, 32, 8,  14336, 32000,  32768,  false, false},
    ModelGeometry{"qwen2.5-0.5b",   "qwen2", 896,  24, 14, 2,  4864,  151936, 32768,  true,  true},
    ModelGeometry{"qwen2.5-7b",     "qwen2", 3584, 28, 28, 4,  18944, 152064, 32768,  false, true},
};

} // namespace

std::uint64_t ModelGeometry::parameters() const {
    const std::uint64_t d = dim, kv_dim = std::uint64_t{n_kv_heads} * head_dim();
    const std::uint64_t attention = d * d * 2 + d * kv_dim * 2 + (qkv_bias ? d + 2 * kv_dim : 0);
    const std::uint64_t ffn = 3 * d * ffn_dim;
    const std::uint64_t per_layer = attention + ffn + 2 * d; // + attention and FFN norms
    const std::uint64_t embeddings = std::uint64_t{vocab} * d * (tied_embeddings ? 1 : 2);
    return embeddings + n_layers * per_layer + d; // + final norm
}

std::span<const ModelGeometry> model_presets() { return kModels; }

const ModelGeometry& find_model_preset(std::string_view name) {
    for (const ModelGeometry& m : kModels)
        if (m.name == name)
            return m;
    std::string known;
    for (const ModelGeometry& m : kModels)
        known += (known.empty() ? "" : ", ") + m.name;
    throw Error("unknown model preset '" + std::string(name) + "' (known: " + known + ")");
}

} // namespace kvscope
