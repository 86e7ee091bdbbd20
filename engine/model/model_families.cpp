#include "engine/model/model_families.h"

#include <array>
#include <cmath>

namespace kvscope {
namespace {

using detail::ConfigReader;

// Every layer global, rotating with the file's base and scaling.
void uniform_layers(ModelConfig& c) {
    c.layers.assign(c.n_layers, LayerAttention{0, true, c.rope_theta, true});
}

// Which layers attend within a window: the file's per-layer flags
// (attention.sliding_window_pattern as an array of bools), or a period n
// (the scalar key, else `default_period`) in which every layer but the
// last of each n is a window layer (llama.cpp's set_swa_pattern).
std::vector<bool> window_layers(const ConfigReader& r, const ModelConfig& c, std::uint32_t default_period) {
    const std::string key = "attention.sliding_window_pattern";
    if (const auto flags = r.file().get_bool_array(r.full_key(key))) {
        if (flags->size() != c.n_layers)
            r.fail(r.described(key) + " has " + std::to_string(flags->size()) + " entries for " +
                   std::to_string(c.n_layers) + " layers");
        return *flags;
    }
    const std::uint32_t period = r.optional_dimension(key).value_or(default_period);
    std::vector<bool> windowed(c.n_layers);
    for (std::uint32_t l = 0; l < c.n_layers; ++l)
        windowed[l] = l % period < period - 1;
    return windowed;
}

// Window layers get `window` and their own RoPE base, unscaled unless
// `scaled`; the others stay global.
void set_windows(const ConfigReader& r, ModelConfig& c, std::uint32_t window, std::uint32_t default_period,
                 double window_theta, bool scaled) {
    const std::vector<bool> windowed = window_layers(r, c, default_period);
    for (std::uint32_t l = 0; l < c.n_layers; ++l)
        if (windowed[l])
            c.layers[l] = LayerAttention{window, true, window_theta, scaled};
}

// Gemma scales queries by 1/sqrt(width / heads) in its 27B models and by
// 1/sqrt(head size) in the others (gemma_pytorch's config; llama.cpp tells
// them apart by layer count).
double gemma_attention_scale(const ModelConfig& c, std::uint32_t layers_of_27b) {
    const double width = c.n_layers == layers_of_27b ? double(c.embedding_dim) / c.n_heads : c.head_dim;
    return 1.0 / std::sqrt(width);
}

void gemma_common(ModelConfig& c) {
    c.rope_style = RopeStyle::NeoXHalves;
    c.post_norms = true;
    c.ffn_activation = FfnActivation::GeluTanh;
    c.embedding_scale = std::sqrt(double(c.embedding_dim));
}

void read_llama(const ConfigReader& r, ModelConfig& c) {
    const auto has_bias = [&](const char* what) {
        return r.file().find_tensor(block_tensor_name(0, what)) != nullptr;
    };
    c.qkv_bias = has_bias("attn_q.bias") || has_bias("attn_k.bias") || has_bias("attn_v.bias");
}

void read_qwen2(const ConfigReader&, ModelConfig& c) {
    c.rope_style = RopeStyle::NeoXHalves;
    c.qkv_bias = true;
}

void read_qwen3(const ConfigReader&, ModelConfig& c) {
    c.rope_style = RopeStyle::NeoXHalves;
    c.qk_norm = true;
}

void read_gemma2(const ConfigReader& r, ModelConfig& c) {
    gemma_common(c);
    c.tied_embeddings = true; // llama.cpp reads the output from token_embd whatever else the file holds
    c.attention_scale = gemma_attention_scale(c, 46);
    c.attn_softcap = r.positive("attn_logit_softcapping", 50.0);
    c.final_softcap = r.positive("final_logit_softcapping", 30.0);
    const std::uint32_t window = r.optional_dimension("attention.sliding_window").value_or(4096);
    set_windows(r, c, window, 2, r.positive("rope.freq_base_swa", c.rope_theta), true);
}

void read_gemma3(const ConfigReader& r, ModelConfig& c) {
    gemma_common(c);
    c.qk_norm = true;
    c.attention_scale = gemma_attention_scale(c, 62);
    if (r.has("final_logit_softcapping"))
        c.final_softcap = r.positive("final_logit_softcapping", std::nullopt);
    if (const auto window = r.optional_dimension("attention.sliding_window"))
        set_windows(r, c, *window, 6, r.positive("rope.freq_base_swa", 10000.0), false);
}

void read_phi3(const ConfigReader& r, ModelConfig& c) {
    c.rope_style = RopeStyle::NeoXHalves;
    c.fused_qkv = r.file().find_tensor(block_tensor_name(0, "attn_qkv.weight")) != nullptr;
    c.fused_gate_up = true;
    c.rope_attn_factor = r.has("rope.scaling.attn_factor") ? r.positive("rope.scaling.attn_factor", std::nullopt)
                                                           : 1.0;
}

// Qwen3's attention with a mixture-of-experts FFN: softmax over every
// expert, the top k renormalised (llama.cpp's qwen3moe: norm_w).
void read_qwen3moe(const ConfigReader& r, ModelConfig& c) {
    read_qwen3(r, c);
    if (!c.is_moe())
        r.fail("a qwen3moe model needs expert_count");
    c.experts.gating = ExpertGating::SoftmaxTopKRenormalized;
}

// gpt-oss: biases on Q/K/V/O, the router and the experts; attention sinks;
// windows (128) on alternate layers starting with layer 0, every layer with
// the same YaRN-scaled RoPE; top-k of the router's logits, softmax over
// those k; the clamped SwiGLU.
void read_gpt_oss(const ConfigReader& r, ModelConfig& c) {
    if (!c.is_moe())
        r.fail("a gpt-oss model needs expert_count");
    c.rope_style = RopeStyle::NeoXHalves;
    c.qkv_bias = true;
    c.output_bias = true;
    c.attn_sinks = true;
    c.experts.biases = true;
    c.experts.gating = ExpertGating::TopKSoftmax;
    c.ffn_activation = FfnActivation::SwiGluClamped;
    const std::uint32_t window = r.dimension("attention.sliding_window");
    set_windows(r, c, window, 2, r.positive("rope.freq_base_swa", c.rope_theta), true);
}

// SmolLM3 leaves RoPE out of layers 3, 7, 11, ... (llama.cpp's
// n_no_rope_layer_step, fixed at 4 for this family).
void read_smollm3(const ConfigReader&, ModelConfig& c) {
    for (std::uint32_t l = 3; l < c.n_layers; l += 4)
        c.layers[l].rope = false;
}

struct Family {
    std::string_view name;
    void (*read)(const ConfigReader&, ModelConfig&);
    bool experts = false; // a mixture-of-experts family (expert_count)
};

constexpr std::array kFamilies{
    Family{"llama", read_llama},       Family{"qwen2", read_qwen2},   Family{"qwen3", read_qwen3},
    Family{"qwen3moe", read_qwen3moe, true}, Family{"gemma2", read_gemma2}, Family{"gemma3", read_gemma3},
    Family{"phi3", read_phi3},         Family{"smollm3", read_smollm3}, Family{"gpt-oss", read_gpt_oss, true},
};

} // namespace

bool is_supported_architecture(std::string_view name) {
    for (const Family& f : kFamilies)
        if (f.name == name)
            return true;
    return false;
}

std::string supported_architecture_list() {
    std::string list;
    for (const Family& f : kFamilies)
        list += (list.empty() ? "" : ", ") + std::string(f.name);
    return list;
}

namespace detail {

void read_family(const ConfigReader& r, ModelConfig& c) {
    uniform_layers(c);
    for (const Family& f : kFamilies)
        if (f.name == c.architecture) {
            // Other families' MoE variants (Mixtral's llama) route and
            // weigh experts their own ways, not checked against llama.cpp.
            if (c.is_moe() && !f.experts)
                r.fail("mixture-of-experts " + c.architecture + " models are not supported (experts: qwen3moe, gpt-oss)");
            return f.read(r, c);
        }
    r.fail("unsupported architecture \"" + c.architecture + "\" (supported: " + supported_architecture_list() + ")");
}

} // namespace detail
} // namespace kvscope
