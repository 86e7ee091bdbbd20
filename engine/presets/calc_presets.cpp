#include "engine/presets/calc_presets.h"

#include <vector>

#include "engine/core/error.h"

namespace kvscope {
namespace {

CalcPreset from_geometry(const ModelGeometry& g, std::string calculator_only) {
    return {calc_model(g), g.architecture, g, std::move(calculator_only)};
}

// DeepSeek-V3-shaped MLA: kv_lora_rank 512 + qk_rope_head_dim 64 per token
// and layer (config.json), 61 layers.
CalcPreset mla(const char* name, std::uint32_t heads, std::uint32_t context, std::uint64_t parameters) {
    constexpr std::uint32_t kLayers = 61;
    CalcModel m{.name = name, .kv = {kLayers, 0, 0}, .parameters = parameters, .context = context,
                .latent = KvLatent{kLayers, 512, 64}, .n_heads = heads};
    return {std::move(m), "deepseek2", std::nullopt,
            "kvscope cannot load or make MLA models (one latent per token and layer, shared by all heads)"};
}

// Models kvscope cannot run, from their published config.json.
std::vector<CalcPreset> calculator_only_presets() {
    // Gemma 3 27B: head_dim 128, queries scaled by 1/sqrt(168) (5376 / 32).
    const ModelGeometry gemma3_27b{
        .name = "gemma3-27b", .architecture = "gemma3", .dim = 5376, .n_layers = 62, .n_heads = 32,
        .n_kv_heads = 16, .ffn_dim = 21504, .vocab = 262208, .context = 131072, .tied_embeddings = true,
        .explicit_head_dim = 128, .norm_eps = 1e-6, .rope_theta = 1e6, .rope_linear_factor = 8.0,
        .sliding_window = 1024, .swa_period = 6, .rope_theta_swa = 10000.0, .query_pre_attn_scalar = 168};
    // gpt-oss-120b (openai/gpt-oss-120b config.json): gpt-oss-20b's shape
    // with 36 layers and 128 experts (4 active); 116.83B parameters as
    // published, counted from the shape.
    ModelGeometry gpt_oss_120b = find_model_preset("gpt-oss-20b");
    gpt_oss_120b.name = "gpt-oss-120b";
    gpt_oss_120b.n_layers = 36;
    gpt_oss_120b.n_experts = 128;
    // Mistral 7B v0.1: Mistral 7B's shape with a window of 4096 on every layer.
    ModelGeometry mistral_v01 = find_model_preset("mistral-7b");
    mistral_v01.name = "mistral-7b-v0.1";
    mistral_v01.sliding_window = 4096;
    return {
        from_geometry(gemma3_27b, "make-model cannot write its 1/sqrt(168) query scale; its GGUF loads"),
        from_geometry(gpt_oss_120b, "make-model has its 20b sibling only (gpt-oss-20b): 117B parameters, "
                                    "about 63 GB with MXFP4 experts"),
        from_geometry(mistral_v01, "cannot be loaded or made with its window: llama.cpp runs llama files "
                                   "with full attention on every layer"),
        mla("deepseek-v3", 128, 163840, 671'000'000'000), // published 671B (without the 14B MTP module)
        mla("kimi-k2", 64, 131072, 1'000'000'000'000),    // published 1T
    };
}

std::vector<CalcPreset> all_presets() {
    std::vector<CalcPreset> presets;
    for (const ModelGeometry& g : model_presets())
        presets.push_back(from_geometry(g, ""));
    for (CalcPreset& p : calculator_only_presets())
        presets.push_back(std::move(p));
    return presets;
}

} // namespace

std::span<const CalcPreset> calc_presets() {
    static const std::vector<CalcPreset> presets = all_presets();
    return presets;
}

const CalcPreset& find_calc_preset(std::string_view name) {
    for (const CalcPreset& p : calc_presets())
        if (p.model.name == name)
            return p;
    std::string known;
    for (const CalcPreset& p : calc_presets())
        known += (known.empty() ? "" : ", ") + p.model.name;
    throw Error("unknown model preset '" + std::string(name) + "' (known: " + known + ")");
}

} // namespace kvscope
