#include "engine/model/ggml_type.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <limits>
#include <string>

#include "engine/core/error.h"
#include "engine/model/message_format.h"
#include "kernels/cpu/quant_blocks.h"

namespace kvscope {
namespace {

using T = GgmlType;

// Block geometry from ggml-common.h. Every type ggml defines is listed, so a
// file using one can still be opened and described; only the dequantizable
// ones can run.
constexpr std::array kTraits{
    GgmlTypeTraits{T::F32, "F32", 1, 4, true},
    GgmlTypeTraits{T::F16, "F16", 1, 2, true},
    GgmlTypeTraits{T::Q4_0, "Q4_0", 32, 18, true},
    GgmlTypeTraits{T::Q4_1, "Q4_1", 32, 20, true},
    GgmlTypeTraits{T::Q5_0, "Q5_0", 32, 22, true},
    GgmlTypeTraits{T::Q5_1, "Q5_1", 32, 24, true},
    GgmlTypeTraits{T::Q8_0, "Q8_0", 32, 34, true},
    GgmlTypeTraits{T::Q8_1, "Q8_1", 32, 36, false},
    GgmlTypeTraits{T::Q2_K, "Q2_K", 256, 84, true},
    GgmlTypeTraits{T::Q3_K, "Q3_K", 256, 110, true},
    GgmlTypeTraits{T::Q4_K, "Q4_K", 256, 144, true},
    GgmlTypeTraits{T::Q5_K, "Q5_K", 256, 176, true},
    GgmlTypeTraits{T::Q6_K, "Q6_K", 256, 210, true},
    GgmlTypeTraits{T::Q8_K, "Q8_K", 256, 292, false},
    GgmlTypeTraits{T::IQ2_XXS, "IQ2_XXS", 256, 66, false},
    GgmlTypeTraits{T::IQ2_XS, "IQ2_XS", 256, 74, false},
    GgmlTypeTraits{T::IQ3_XXS, "IQ3_XXS", 256, 98, false},
    GgmlTypeTraits{T::IQ1_S, "IQ1_S", 256, 50, false},
    GgmlTypeTraits{T::IQ4_NL, "IQ4_NL", 32, 18, true},
    GgmlTypeTraits{T::IQ3_S, "IQ3_S", 256, 110, false},
    GgmlTypeTraits{T::IQ2_S, "IQ2_S", 256, 82, false},
    GgmlTypeTraits{T::IQ4_XS, "IQ4_XS", 256, 136, true},
    GgmlTypeTraits{T::I8, "I8", 1, 1, false},
    GgmlTypeTraits{T::I16, "I16", 1, 2, false},
    GgmlTypeTraits{T::I32, "I32", 1, 4, false},
    GgmlTypeTraits{T::I64, "I64", 1, 8, false},
    GgmlTypeTraits{T::F64, "F64", 1, 8, false},
    GgmlTypeTraits{T::IQ1_M, "IQ1_M", 256, 56, false},
    GgmlTypeTraits{T::BF16, "BF16", 1, 2, true},
    GgmlTypeTraits{T::TQ1_0, "TQ1_0", 256, 54, false},
    GgmlTypeTraits{T::TQ2_0, "TQ2_0", 256, 66, false},
    GgmlTypeTraits{T::MXFP4, "MXFP4", 32, 17, true},
};

// product = a * b; false (product untouched) when it does not fit in 64 bits.
bool multiply(std::uint64_t a, std::uint64_t b, std::uint64_t& product) {
    if (b != 0 && a > std::numeric_limits<std::uint64_t>::max() / b)
        return false;
    product = a * b;
    return true;
}

} // namespace

const GgmlTypeTraits* find_ggml_type(std::uint32_t raw) {
    const auto it = std::find_if(kTraits.begin(), kTraits.end(), [raw](const auto& t) {
        return static_cast<std::uint32_t>(t.type) == raw;
    });
    return it == kTraits.end() ? nullptr : &*it;
}

const GgmlTypeTraits& traits(GgmlType type) {
    const GgmlTypeTraits* found = find_ggml_type(static_cast<std::uint32_t>(type));
    if (found == nullptr)
        throw Error("unknown ggml type " + std::to_string(static_cast<std::uint32_t>(type)));
    return *found;
}

std::string_view to_string(GgmlType type) { return traits(type).name; }

bool is_dequantizable(GgmlType type) { return traits(type).dequantizable; }

std::string dequantizable_type_names() {
    std::string names;
    for (const GgmlTypeTraits& t : kTraits)
        if (t.dequantizable)
            names += (names.empty() ? "" : ", ") + std::string(t.name);
    return names;
}

std::uint64_t row_bytes(GgmlType type, std::uint64_t row_length) {
    const GgmlTypeTraits& t = traits(type);
    if (row_length == 0 || row_length % t.block_values != 0)
        throw Error("row length " + grouped(row_length) + " is not a whole number of " +
                    std::string(t.name) + " blocks (" + std::to_string(t.block_values) +
                    " values each)");
    std::uint64_t bytes = 0;
    if (!multiply(row_length / t.block_values, t.block_bytes, bytes))
        throw Error("row of " + grouped(row_length) + " values overflows 64 bits");
    return bytes;
}

std::uint64_t tensor_bytes(GgmlType type, std::span<const std::uint64_t> dims) {
    if (dims.empty())
        throw Error("tensor has no dimensions");
    std::uint64_t bytes = row_bytes(type, dims[0]);
    for (std::size_t i = 1; i < dims.size(); ++i) {
        if (dims[i] == 0)
            throw Error("dimension " + std::to_string(i) + " is zero");
        if (!multiply(bytes, dims[i], bytes))
            throw Error("tensor size overflows 64 bits");
    }
    return bytes;
}

void dequantize_row(GgmlType type, const void* src, float* dst, std::uint64_t n) {
    namespace cpu = kernels::cpu;
    const GgmlTypeTraits& t = traits(type);
    if (n % t.block_values != 0)
        throw Error("cannot dequantize " + grouped(n) + " values of " + std::string(t.name) +
                    ": not a whole number of " + std::to_string(t.block_values) +
                    "-value blocks");
    switch (type) {
    case T::F32: std::memcpy(dst, src, n * sizeof(float)); return;
    case T::F16: cpu::dequantize_row_f16(src, dst, n); return;
    case T::BF16: cpu::dequantize_row_bf16(src, dst, n); return;
    case T::Q8_0: cpu::dequantize_row_q8_0(src, dst, n); return;
    case T::Q4_0: cpu::dequantize_row_q4_0(src, dst, n); return;
    case T::Q5_0: cpu::dequantize_row_q5_0(src, dst, n); return;
    case T::Q4_K: cpu::dequantize_row_q4_k(src, dst, n); return;
    case T::Q5_K: cpu::dequantize_row_q5_k(src, dst, n); return;
    case T::Q6_K: cpu::dequantize_row_q6_k(src, dst, n); return;
    case T::Q4_1: cpu::dequantize_row_q4_1(src, dst, n); return;
    case T::Q5_1: cpu::dequantize_row_q5_1(src, dst, n); return;
    case T::Q2_K: cpu::dequantize_row_q2_k(src, dst, n); return;
    case T::Q3_K: cpu::dequantize_row_q3_k(src, dst, n); return;
    case T::IQ4_NL: cpu::dequantize_row_iq4_nl(src, dst, n); return;
    case T::IQ4_XS: cpu::dequantize_row_iq4_xs(src, dst, n); return;
    case T::MXFP4: cpu::dequantize_row_mxfp4(src, dst, n); return;
    default:
        throw Error("tensor type " + std::string(t.name) + " is not supported for computation");
    }
}

} // namespace kvscope
