#include "net/attach/kv_cache_types.h"

#include <array>
#include <utility>

namespace kvscope::attach {
namespace {

// llama.cpp's -ctk/-ctv names and their ggml types, f16 (its default) first.
constexpr std::array<std::pair<std::string_view, GgmlType>, 9> kLlamaCppTypes{{
    {"f16", GgmlType::F16},
    {"f32", GgmlType::F32},
    {"bf16", GgmlType::BF16},
    {"q8_0", GgmlType::Q8_0},
    {"q4_0", GgmlType::Q4_0},
    {"q4_1", GgmlType::Q4_1},
    {"iq4_nl", GgmlType::IQ4_NL},
    {"q5_0", GgmlType::Q5_0},
    {"q5_1", GgmlType::Q5_1},
}};

// vLLM's --kv-cache-dtype names and the float spellings both servers' APIs
// use; "auto" keeps the model's 16-bit type.
constexpr std::array<std::pair<std::string_view, double>, 9> kFloatTypes{{
    {"float32", 32},
    {"float16", 16},
    {"half", 16},
    {"bfloat16", 16},
    {"auto", 16},
    {"fp8", 8},
    {"fp8_e4m3", 8},
    {"fp8_e5m2", 8},
    {"fp8_inc", 8},
}};

} // namespace

std::optional<GgmlType> llamacpp_cache_type(std::string_view name) {
    for (const auto& [known, type] : kLlamaCppTypes)
        if (known == name)
            return type;
    return std::nullopt;
}

bool is_llama_cache_type(std::string_view name) { return llamacpp_cache_type(name).has_value(); }

std::vector<std::string_view> llama_cache_types() {
    std::vector<std::string_view> names;
    for (const auto& entry : kLlamaCppTypes)
        names.push_back(entry.first);
    return names;
}

std::optional<double> kv_cache_type_bits(std::string_view name) {
    if (const std::optional<GgmlType> type = llamacpp_cache_type(name)) {
        const GgmlTypeTraits& t = traits(*type);
        return 8.0 * t.block_bytes / t.block_values;
    }
    for (const auto& [known, bits] : kFloatTypes)
        if (known == name)
            return bits;
    return std::nullopt;
}

} // namespace kvscope::attach
