#include "app/cli/weight_formats.h"

#include <array>
#include <cctype>

#include "engine/core/error.h"
#include "engine/model/ggml_type.h"

namespace kvscope::cli {
namespace {

// The GGUF weight types people download, named as llama.cpp's file names do.
constexpr std::array kTypes{GgmlType::F32, GgmlType::F16, GgmlType::BF16, GgmlType::Q8_0,
                            GgmlType::Q6_K, GgmlType::Q5_K, GgmlType::Q4_K, GgmlType::Q4_0};

std::string lower(std::string_view s) {
    std::string out(s);
    for (char& c : out)
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
}

} // namespace

std::uint64_t weight_bytes(std::uint64_t parameters, const std::string& type) {
    for (GgmlType t : kTypes)
        if (type == lower(to_string(t))) {
            const GgmlTypeTraits& tr = traits(t);
            return (parameters + tr.block_values - 1) / tr.block_values * tr.block_bytes;
        }
    throw Error("unknown weight type '" + type + "' (known: " + weight_format_names() + ")");
}

std::string weight_format_names() {
    std::string names;
    for (GgmlType t : kTypes)
        names += (names.empty() ? "" : ", ") + lower(to_string(t));
    return names;
}

} // namespace kvscope::cli
