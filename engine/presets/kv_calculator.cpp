#include "engine/presets/kv_calculator.h"

#include <algorithm>
#include <array>
#include <cctype>

#include "engine/core/error.h"
#include "engine/model/gguf_file.h"
#include "engine/model/model_config.h"
#include "engine/model/tensor_stats.h"

namespace kvscope {
namespace {

constexpr std::array kWeightFormats{GgmlType::F32,  GgmlType::F16,  GgmlType::BF16, GgmlType::Q8_0,
                                    GgmlType::Q6_K, GgmlType::Q5_K, GgmlType::Q4_K, GgmlType::Q4_0};

} // namespace

CalcModel calc_model(const ModelGeometry& preset) {
    CalcModel m{.name = preset.name, .kv = preset.kv(), .parameters = preset.parameters(),
                .context = preset.context, .n_heads = preset.n_heads};
    std::vector<std::uint32_t> windows(preset.n_layers, 0);
    for (std::uint32_t l = 0; l < preset.n_layers; ++l)
        windows[l] = preset.is_window_layer(l) ? preset.sliding_window : 0;
    if (std::any_of(windows.begin(), windows.end(), [](std::uint32_t w) { return w > 0; }))
        m.layer_windows = std::move(windows);
    return m;
}

CalcModel calc_model(const ModelConfig& config, const TensorStats& stats, const std::string& fallback_name) {
    return {.name = config.name.empty() ? fallback_name : config.name,
            .kv = config.kv_geometry(),
            .parameters = stats.parameters,
            .file_weight_bytes = stats.bytes,
            .context = config.context_length,
            .layer_windows = config.has_windows() ? config.layer_windows() : std::vector<std::uint32_t>{},
            .n_heads = config.n_heads};
}

CalcModel calc_model_from_file(const std::string& gguf_path) {
    const GgufFile file(gguf_path);
    return calc_model(read_model_config(file), tensor_stats(file), gguf_path);
}

std::span<const GgmlType> weight_formats() { return kWeightFormats; }

std::string weight_format_name(GgmlType type) {
    std::string name(to_string(type));
    for (char& c : name)
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return name;
}

std::string weight_format_names() {
    std::string names;
    for (GgmlType t : kWeightFormats)
        names += (names.empty() ? "" : ", ") + weight_format_name(t);
    return names;
}

std::uint64_t weight_bytes(std::uint64_t parameters, std::string_view format) {
    for (GgmlType t : kWeightFormats)
        if (format == weight_format_name(t)) {
            const GgmlTypeTraits& tr = traits(t);
            return (parameters + tr.block_values - 1) / tr.block_values * tr.block_bytes;
        }
    throw Error("unknown weight type '" + std::string(format) + "' (known: " + weight_format_names() + ")");
}

CalcResult run_kv_calculator(const CalcInputs& in) {
    CalcResult r;
    r.question.geometry = in.model.kv;
    r.question.layer_windows = in.model.layer_windows;
    r.question.latent = in.model.latent;
    r.question.keep_whole = in.keep_whole;
    r.question.chunk_tokens = in.chunk_tokens;
    r.question.block_size = in.block_size;
    r.question.tokens_per_sequence = in.tokens_per_sequence;
    r.question.sequences = in.sequences;
    r.question.memory_fraction = in.memory_fraction;
    if (in.device) {
        if (in.model.parameters == 0)
            throw Error("a GPU needs a preset or a model file: the weights' size comes from the model");
        if (in.model.file_weight_bytes && !in.weights) {
            r.weights = "as in the file";
            r.question.weight_bytes = *in.model.file_weight_bytes;
        } else {
            r.weights = in.weights.value_or("f16");
            r.question.weight_bytes = weight_bytes(in.model.parameters, r.weights);
        }
        r.question.device_bytes = in.device->memory_bytes;
    }
    r.answers = answer_kv_memory_all_dtypes(r.question);
    return r;
}

} // namespace kvscope
