#include "app/cli/weight_formats.h"

#include <array>

#include "engine/core/error.h"

namespace kvscope::cli {
namespace {

// ggml block layouts: bytes per block of `values` weights.
struct WeightFormat {
    const char* name;
    std::uint64_t values;
    std::uint64_t bytes;
};
constexpr std::array kFormats{
    WeightFormat{"f32", 1, 4},     WeightFormat{"f16", 1, 2},     WeightFormat{"bf16", 1, 2},
    WeightFormat{"q8_0", 32, 34},  WeightFormat{"q6_k", 256, 210}, WeightFormat{"q5_k", 256, 176},
    WeightFormat{"q4_k", 256, 144}, WeightFormat{"q4_0", 32, 18},
};

} // namespace

std::uint64_t weight_bytes(std::uint64_t parameters, const std::string& type) {
    for (const WeightFormat& f : kFormats)
        if (type == f.name)
            return (parameters + f.values - 1) / f.values * f.bytes;
    throw Error("unknown weight type '" + type + "' (known: " + weight_format_names() + ")");
}

std::string weight_format_names() {
    std::string names;
    for (const WeightFormat& f : kFormats)
        names += (names.empty() ? "" : ", ") + std::string(f.name);
    return names;
}

} // namespace kvscope::cli
