#include "engine/presets/calc_presets.h"

#include <vector>

#include "engine/core/error.h"

namespace kvscope {
namespace {

CalcPreset from_geometry(const ModelGeometry& g, std::string calculator_only) {
    return {calc_model(g), g.architecture, g, std::move(calculator_only)};
}

// A mixture-of-experts model: its window pattern from the geometry, its
// parameters as published (the dense count of ModelGeometry::parameters()
// does not hold for experts).
CalcPreset moe(const ModelGeometry& g, std::uint64_t parameters, std::string calculator_only) {
    CalcPreset p = from_geometry(g, std::move(calculator_only));
    p.model.parameters = parameters;
    return p;
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
    // gpt-oss: windows of 128 on the even layers, 64 query and 8 KV heads
    // of 64; 32 (20b) or 128 (120b) experts, 4 active.
    auto gpt_oss = [](const char* name, std::uint32_t layers) {
        return ModelGeometry{.name = name, .architecture = "gpt-oss", .dim = 2880, .n_layers = layers,
                             .n_heads = 64, .n_kv_heads = 8, .ffn_dim = 2880, .vocab = 201088, .context = 131072,
                             .explicit_head_dim = 64, .rope_theta = 150000.0, .sliding_window = 128,
                             .swa_period = 2};
    };
    // Mistral 7B v0.1: Mistral 7B's shape with a window of 4096 on every layer.
    ModelGeometry mistral_v01 = find_model_preset("mistral-7b");
    mistral_v01.name = "mistral-7b-v0.1";
    mistral_v01.sliding_window = 4096;
    const std::string gpt_oss_why = "kvscope cannot load or make gpt-oss (experts, attention sinks)";
    return {
        from_geometry(gemma3_27b, "make-model cannot write its 1/sqrt(168) query scale; its GGUF loads"),
        moe(gpt_oss("gpt-oss-20b", 24), 20'910'000'000, gpt_oss_why),   // published 20.91B
        moe(gpt_oss("gpt-oss-120b", 36), 116'830'000'000, gpt_oss_why), // published 116.83B
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
