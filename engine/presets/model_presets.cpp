#include "engine/presets/model_presets.h"

#include <array>

#include "engine/core/error.h"

namespace kvscope {
namespace {

// Phi-4-mini-instruct's config.json rope_scaling: LongRoPE factors of its 48
// rotated pairs (96 of 128 dimensions), long beyond 4096 tokens, short within.
constexpr std::array<float, 48> kPhi4MiniLongFactors{
    1.0f,         1.118320672f, 1.250641126f, 1.398617824f, 1.564103225f, 1.74916897f,  1.956131817f,
    2.187582649f, 2.446418898f, 2.735880826f, 3.059592084f, 3.421605075f, 3.826451687f, 4.279200023f,
    4.785517845f, 5.351743533f, 5.984965424f, 6.693110555f, 7.485043894f, 8.370679318f, 9.36110372f,
    10.4687158f,  11.70738129f, 13.09260651f, 14.64173252f, 16.37415215f, 18.31155283f, 20.47818807f,
    22.90118105f, 25.61086418f, 28.64115884f, 32.03f,       32.1f,        32.13f,       32.23f,
    32.6f,        32.61f,       32.64f,       32.66f,       32.7f,        32.71f,       32.93f,
    32.97f,       33.28f,       33.49f,       33.5f,        44.16f,       47.77f};
constexpr std::array<float, 48> kPhi4MiniShortFactors = [] {
    std::array<float, 48> ones{};
    ones.fill(1.0f);
    return ones;
}();

ModelGeometry qwen3(const char* name, std::uint32_t dim, std::uint32_t layers, std::uint32_t heads,
                    std::uint32_t ffn, bool tied) {
    return {.name = name, .architecture = "qwen3", .dim = dim, .n_layers = layers, .n_heads = heads,
            .n_kv_heads = 8, .ffn_dim = ffn, .vocab = 151936, .context = 40960, .tied_embeddings = tied,
            .explicit_head_dim = 128, .norm_eps = 1e-6, .rope_theta = 1e6};
}

// Gemma 3: five window layers, then a global one; local RoPE base 10000,
// global 1e6; no soft-caps (final_logit_softcapping null).
ModelGeometry gemma3(const char* name, std::uint32_t dim, std::uint32_t layers, std::uint32_t heads,
                     std::uint32_t kv_heads, std::uint32_t ffn, std::uint32_t vocab, std::uint32_t context,
                     std::uint32_t window, double linear_factor) {
    return {.name = name, .architecture = "gemma3", .dim = dim, .n_layers = layers, .n_heads = heads,
            .n_kv_heads = kv_heads, .ffn_dim = ffn, .vocab = vocab, .context = context, .tied_embeddings = true,
            .explicit_head_dim = 256, .norm_eps = 1e-6, .rope_theta = 1e6, .rope_linear_factor = linear_factor,
            .sliding_window = window, .swa_period = 6, .rope_theta_swa = 10000.0, .query_pre_attn_scalar = 256};
}

// From each model's published config.json (Hugging Face). The short rows
// give the first eleven fields in order; RMSNorm epsilon 1e-5 and RoPE base
// 10000 unless named.
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
    ModelGeometry{.name = "llama-3-8b", .architecture = "llama", .dim = 4096, .n_layers = 32, .n_heads = 32,
                  .n_kv_heads = 8, .ffn_dim = 14336, .vocab = 128256, .context = 8192, .rope_theta = 500000.0},
    ModelGeometry{.name = "llama-3-70b", .architecture = "llama", .dim = 8192, .n_layers = 80, .n_heads = 64,
                  .n_kv_heads = 8, .ffn_dim = 28672, .vocab = 128256, .context = 8192, .rope_theta = 500000.0},
    ModelGeometry{"mistral-7b",     "llama", 4096, 32, 32, 8,  14336, 32000,  32768,  false, false},
    ModelGeometry{.name = "qwen2.5-0.5b", .architecture = "qwen2", .dim = 896, .n_layers = 24, .n_heads = 14,
                  .n_kv_heads = 2, .ffn_dim = 4864, .vocab = 151936, .context = 32768, .tied_embeddings = true,
                  .qkv_bias = true, .rope_theta = 1e6},
    ModelGeometry{.name = "qwen2.5-7b", .architecture = "qwen2", .dim = 3584, .n_layers = 28, .n_heads = 28,
                  .n_kv_heads = 4, .ffn_dim = 18944, .vocab = 152064, .context = 32768, .tied_embeddings = false,
                  .qkv_bias = true, .rope_theta = 1e6},
    // Qwen3: head_dim 128 whatever the width, 8 KV heads, QK-norm.
    qwen3("qwen3-0.6b", 1024, 28, 16, 3072, true),
    qwen3("qwen3-1.7b", 2048, 28, 16, 6144, true),
    qwen3("qwen3-4b", 2560, 36, 32, 9728, true),
    qwen3("qwen3-8b", 4096, 36, 32, 12288, false),
    //     name           dim   layers heads kv ffn    vocab   context window linear
    gemma3("gemma3-270m", 640,  18,    4,    1, 2048,  262144, 32768,  512,   1.0),
    gemma3("gemma3-1b",   1152, 26,    4,    1, 6912,  262144, 32768,  512,   1.0),
    gemma3("gemma3-4b",   2560, 34,    8,    4, 10240, 262208, 131072, 1024,  8.0),
    // Gemma 2: windows of 4096 on alternate layers (the even ones), soft-caps.
    ModelGeometry{.name = "gemma2-2b", .architecture = "gemma2", .dim = 2304, .n_layers = 26, .n_heads = 8,
                  .n_kv_heads = 4, .ffn_dim = 9216, .vocab = 256000, .context = 8192, .tied_embeddings = true,
                  .explicit_head_dim = 256, .norm_eps = 1e-6, .sliding_window = 4096, .swa_period = 2,
                  .attn_softcap = 50.0, .final_softcap = 30.0, .query_pre_attn_scalar = 256},
    // Phi-4-mini: fused QKV and gate/up, RoPE on 96 of 128 dimensions with
    // LongRoPE beyond 4096 tokens. Its config's sliding_window (262144, more
    // than its context) is in the file; llama.cpp ignores phi3 windows.
    ModelGeometry{.name = "phi-4-mini", .architecture = "phi3", .dim = 3072, .n_layers = 32, .n_heads = 24,
                  .n_kv_heads = 8, .ffn_dim = 8192, .vocab = 200064, .context = 131072, .tied_embeddings = true,
                  .rope_dims = 96, .rope_factors_long = kPhi4MiniLongFactors,
                  .rope_factors_short = kPhi4MiniShortFactors, .rope_original_context = 4096,
                  .sliding_window = 262144},
    // SmolLM3: llama-shaped, no RoPE on every fourth layer.
    ModelGeometry{.name = "smollm3-3b", .architecture = "smollm3", .dim = 2048, .n_layers = 36, .n_heads = 16,
                  .n_kv_heads = 4, .ffn_dim = 11008, .vocab = 128256, .context = 65536, .tied_embeddings = true,
                  .norm_eps = 1e-6, .rope_theta = 5e6, .no_rope_period = 4},
    // Qwen3-30B-A3B (Qwen/Qwen3-30B-A3B config.json): Qwen3's attention
    // (QK-norm, head_dim 128) with 32 query and 4 KV heads; 128 experts of
    // moe_intermediate_size 768, num_experts_per_tok 8, on every layer
    // (decoder_sparse_step 1, no mlp_only_layers); intermediate_size 6144
    // is in the file, unused; untied.
    ModelGeometry{.name = "qwen3-30b-a3b", .architecture = "qwen3moe", .dim = 2048, .n_layers = 48, .n_heads = 32,
                  .n_kv_heads = 4, .ffn_dim = 6144, .vocab = 151936, .context = 40960, .explicit_head_dim = 128,
                  .norm_eps = 1e-6, .rope_theta = 1e6, .n_experts = 128, .n_experts_used = 8, .expert_ffn_dim = 768},
    // gpt-oss-20b (openai/gpt-oss-20b config.json): 64 query and 8 KV heads
    // of head_dim 64 on a 2880-wide model; layer_types alternate
    // sliding_attention (128 tokens) and full_attention from layer 0
    // (llama.cpp's swa pattern 2); rope_theta 150000 with rope_scaling yarn,
    // factor 32 over original_max_position_embeddings 4096; 32 experts
    // (num_local_experts) of intermediate_size 2880, experts_per_token 4;
    // rms_norm_eps 1e-5; untied. Biases and attention sinks: has_biases(),
    // has_attention_sinks().
    ModelGeometry{.name = "gpt-oss-20b", .architecture = "gpt-oss", .dim = 2880, .n_layers = 24, .n_heads = 64,
                  .n_kv_heads = 8, .ffn_dim = 2880, .vocab = 201088, .context = 131072, .explicit_head_dim = 64,
                  .rope_theta = 150000.0, .rope_original_context = 4096, .rope_yarn_factor = 32.0,
                  .sliding_window = 128, .swa_period = 2, .n_experts = 32, .n_experts_used = 4,
                  .expert_ffn_dim = 2880},
};

} // namespace

bool ModelGeometry::is_window_layer(std::uint32_t layer) const {
    // Phi-3's files carry a window that llama.cpp (and so kvscope's reader)
    // ignores: its layers attend globally.
    if (sliding_window == 0 || architecture == "phi3")
        return false;
    return swa_period == 0 || layer % swa_period < swa_period - 1;
}

bool ModelGeometry::uses_rope(std::uint32_t layer) const {
    return no_rope_period == 0 || (layer + 1) % no_rope_period != 0;
}

bool ModelGeometry::has_qk_norm() const {
    return architecture == "qwen3" || architecture == "qwen3moe" || architecture == "gemma3";
}

bool ModelGeometry::has_post_norms() const { return architecture == "gemma2" || architecture == "gemma3"; }

bool ModelGeometry::has_fused_matrices() const { return architecture == "phi3"; }

namespace {

// One expert's weights: gate, up and down, with their biases where the
// architecture has them.
std::uint64_t expert_parameters(const ModelGeometry& g) {
    const std::uint64_t d = g.dim, f = g.expert_ffn_dim;
    return 3 * d * f + (g.has_biases() ? 2 * f + d : 0);
}

// A layer's weights with `experts` of its experts counted (the dense FFN
// for a dense model).
std::uint64_t layer_parameters(const ModelGeometry& g, std::uint32_t experts) {
    const std::uint64_t d = g.dim, q = g.q_dim(), kv = g.kv_dim(), hd = g.head_dim();
    const std::uint64_t attention = d * q * 2 + d * kv * 2 + (g.has_qkv_bias() ? q + 2 * kv : 0) +
                                    (g.has_biases() ? d : 0) + (g.has_qk_norm() ? 2 * hd : 0) +
                                    (g.has_attention_sinks() ? g.n_heads : 0);
    const std::uint64_t router = g.is_moe() ? d * g.n_experts + (g.has_biases() ? g.n_experts : 0) : 0;
    const std::uint64_t ffn = g.is_moe() ? router + experts * expert_parameters(g) : 3 * d * g.ffn_dim;
    const std::uint64_t norms = (g.has_post_norms() ? 4 : 2) * d; // attention and FFN (pre, and post)
    return attention + ffn + norms;
}

// Everything outside the layers but the embedding: the final norm and
// LongRoPE's factors.
std::uint64_t other_parameters(const ModelGeometry& g) {
    return g.dim + g.rope_factors_long.size() + g.rope_factors_short.size();
}

} // namespace

std::uint64_t ModelGeometry::parameters() const {
    const std::uint64_t embeddings = std::uint64_t{vocab} * dim * (tied_embeddings ? 1 : 2);
    return embeddings + n_layers * layer_parameters(*this, n_experts) + other_parameters(*this);
}

std::uint64_t ModelGeometry::active_parameters() const {
    // One embedding row, and the output matrix (the embedding itself, tied).
    const std::uint64_t embeddings = std::uint64_t{vocab} * dim + (tied_embeddings ? 0 : dim);
    return embeddings + n_layers * layer_parameters(*this, n_experts_used) + other_parameters(*this);
}

namespace {

// `value` (0: none) checked against [min, max]; `what` names the option.
bool cut_asked(std::uint32_t value, std::uint32_t min, std::uint32_t max, const char* what, const ModelGeometry& g) {
    if (value == 0)
        return false;
    if (value < min || value > max)
        throw Error(std::string(what) + " must be in " + std::to_string(min) + ".." + std::to_string(max) + " for " +
                    g.name + ", got " + std::to_string(value));
    return true;
}

} // namespace

ModelGeometry cut_geometry(const ModelGeometry& preset, const GeometryCut& cut) {
    ModelGeometry g = preset;
    std::string what;
    if (cut_asked(cut.layers, 1, preset.n_layers, "--layers", preset)) {
        g.n_layers = cut.layers;
        what += ", " + std::to_string(cut.layers) + " of " + std::to_string(preset.n_layers) + " layers";
    }
    if (cut_asked(cut.vocab, 260, preset.vocab, "--vocab", preset)) {
        g.vocab = cut.vocab;
        what += ", vocabulary " + std::to_string(cut.vocab);
    }
    if (cut.window != 0 && preset.sliding_window == 0)
        throw Error("--window: " + preset.name + " has no sliding-window layers");
    if (cut_asked(cut.window, 1, preset.sliding_window, "--window", preset)) {
        g.sliding_window = cut.window;
        what += ", window " + std::to_string(cut.window);
    }
    // A mixture of experts' --ffn is its experts' width; its dense width,
    // which its layers do not run, follows so the file stays consistent.
    if (cut_asked(cut.ffn, 32, preset.is_moe() ? preset.expert_ffn_dim : preset.ffn_dim, "--ffn", preset)) {
        if (cut.ffn % 32 != 0)
            throw Error("--ffn must be a multiple of 32, got " + std::to_string(cut.ffn));
        g.ffn_dim = cut.ffn;
        if (g.is_moe())
            g.expert_ffn_dim = cut.ffn;
        what += ", FFN " + std::to_string(cut.ffn);
    }
    if (cut.experts != 0 && !preset.is_moe())
        throw Error("--experts: " + preset.name + " has no experts");
    if (cut_asked(cut.experts, preset.n_experts_used, preset.n_experts, "--experts", preset)) {
        g.n_experts = cut.experts;
        what += ", " + std::to_string(cut.experts) + " of " + std::to_string(preset.n_experts) + " experts";
    }
    if (cut_asked(cut.context, 1, preset.context, "--context", preset)) {
        g.context = cut.context;
        what += ", context " + std::to_string(cut.context);
    }
    if (!what.empty())
        g.name += what;
    return g;
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
