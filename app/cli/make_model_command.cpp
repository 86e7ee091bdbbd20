// kvscope-cli make-model: a GGUF with random weights of a real model's shape.
#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <optional>
#include <string>
#include <string_view>

#include "app/cli/commands.h"
#include "app/cli/text_file.h"
#include "engine/core/error.h"
#include "engine/model/quantize.h"
#include "engine/model/synthetic_model.h"
#include "engine/presets/model_presets.h"

namespace kvscope::cli {
namespace {

// --type mxfp4: gpt-oss's own files, experts in MXFP4 and every other
// matrix in Q8_0 (llama-quantize's MXFP4_MOE).
constexpr std::string_view kMxfp4Experts = "mxfp4";

GgmlType parse_weight_type(const std::string& word) {
    std::string names;
    for (const GgmlType type : quantizable_types()) {
        std::string name(to_string(type));
        std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
        if (name == kMxfp4Experts) // the word names gpt-oss's layout, not MXFP4 everywhere
            continue;
        if (word == name)
            return type;
        names += (names.empty() ? "" : ", ") + name;
    }
    throw Error("make-model --type must be one of " + names + ", or " + std::string(kMxfp4Experts) +
                " for a mixture of experts; got '" + word + "'");
}

WeightTypes parse_weight_types(const std::string& word, const ModelGeometry& g) {
    if (word != kMxfp4Experts)
        return parse_weight_type(word);
    if (!g.is_moe())
        throw Error("make-model --type mxfp4 stores a mixture of experts' experts in MXFP4; " + g.name +
                    " has no experts");
    return {GgmlType::Q8_0, GgmlType::MXFP4};
}

std::string types_name(const WeightTypes& types) {
    if (types.experts == types.matrices)
        return std::string(to_string(types.matrices));
    return std::string(to_string(types.experts)) + " experts, " + std::string(to_string(types.matrices)) +
           " otherwise";
}

// --chat-template FILE's Jinja text; empty without the option.
std::string read_chat_template_file(const std::optional<std::string>& path) {
    if (!path)
        return {};
    try {
        return read_text_file(*path);
    } catch (const Error& e) {
        throw Error(std::string("make-model --chat-template: ") + e.what());
    }
}

// --layers/--vocab/--window/--ffn/--context/--experts: a preset made smaller
// for tests (0: as the preset; cut_geometry checks the ranges).
GeometryCut read_cut(Args& args) {
    auto count = [&](const char* name) {
        return static_cast<std::uint32_t>(args.int_or(name, 0, 0, std::numeric_limits<std::uint32_t>::max()));
    };
    GeometryCut cut;
    cut.layers = count("--layers");
    cut.vocab = count("--vocab");
    cut.window = count("--window");
    cut.ffn = count("--ffn");
    cut.context = count("--context");
    cut.experts = count("--experts");
    return cut;
}

} // namespace

int run_make_model(Args& args) {
    const auto preset = args.value("--preset");
    const std::string type_word = args.value_or("--type", "f16");
    const auto out = args.value("-o");
    const auto seed = static_cast<std::uint64_t>(args.int_or("--seed", 1, 0, INT64_MAX));
    const auto chat_template_file = args.value("--chat-template");
    const GeometryCut cut = read_cut(args);
    args.finish();
    if (!preset || !out)
        throw Error("make-model needs --preset NAME and -o FILE.gguf (calc --list shows presets)");
    const ModelGeometry g = cut_geometry(find_model_preset(*preset), cut);
    const WeightTypes types = parse_weight_types(type_word, g);
    const std::string chat_template = read_chat_template_file(chat_template_file);
    const auto start = std::chrono::steady_clock::now();
    write_synthetic_model(g, types, seed, *out, chat_template);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("%s: synthetic %s (random weights, meaningless text), %s, %.1f MB, written in %.1f s\n", out->c_str(),
                g.name.c_str(), types_name(types).c_str(),
                static_cast<double>(std::filesystem::file_size(*out)) / 1e6, seconds);
    return 0;
}

} // namespace kvscope::cli
