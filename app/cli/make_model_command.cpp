// kvscope-cli make-model: a GGUF with random weights of a real model's shape.
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>

#include "app/cli/commands.h"
#include "app/cli/text_file.h"
#include "engine/core/error.h"
#include "engine/model/synthetic_model.h"
#include "engine/presets/model_presets.h"

namespace kvscope::cli {
namespace {

GgmlType parse_weight_type(const std::string& word) {
    if (word == "f32")
        return GgmlType::F32;
    if (word == "f16")
        return GgmlType::F16;
    if (word == "bf16")
        return GgmlType::BF16;
    if (word == "q8_0")
        return GgmlType::Q8_0;
    if (word == "q4_0")
        return GgmlType::Q4_0;
    throw Error("make-model --type must be f32, f16, bf16, q8_0 or q4_0, got '" + word + "'");
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

} // namespace

int run_make_model(Args& args) {
    const auto preset = args.value("--preset");
    const GgmlType type = parse_weight_type(args.value_or("--type", "f16"));
    const auto out = args.value("-o");
    const auto seed = static_cast<std::uint64_t>(args.int_or("--seed", 1, 0, INT64_MAX));
    const auto chat_template_file = args.value("--chat-template");
    args.finish();
    if (!preset || !out)
        throw Error("make-model needs --preset NAME and -o FILE.gguf (calc --list shows presets)");
    const ModelGeometry& g = find_model_preset(*preset);
    const std::string chat_template = read_chat_template_file(chat_template_file);
    const auto start = std::chrono::steady_clock::now();
    write_synthetic_model(g, type, seed, *out, chat_template);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("%s: synthetic %s (random weights, meaningless text), %s, %.1f MB, written in %.1f s\n", out->c_str(),
                g.name.c_str(), std::string(to_string(type)).c_str(),
                static_cast<double>(std::filesystem::file_size(*out)) / 1e6, seconds);
    return 0;
}

} // namespace kvscope::cli
