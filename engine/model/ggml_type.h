// ggml's tensor element types: their numbering in GGUF files, block
// geometry, byte sizes, and dequantization of the types the engine computes
// with.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace kvscope {

// ggml's numbering (ggml.h). Gaps are types ggml has removed.
enum class GgmlType : std::uint32_t {
    F32 = 0,
    F16 = 1,
    Q4_0 = 2,
    Q4_1 = 3,
    Q5_0 = 6,
    Q5_1 = 7,
    Q8_0 = 8,
    Q8_1 = 9,
    Q2_K = 10,
    Q3_K = 11,
    Q4_K = 12,
    Q5_K = 13,
    Q6_K = 14,
    Q8_K = 15,
    IQ2_XXS = 16,
    IQ2_XS = 17,
    IQ3_XXS = 18,
    IQ1_S = 19,
    IQ4_NL = 20,
    IQ3_S = 21,
    IQ2_S = 22,
    IQ4_XS = 23,
    I8 = 24,
    I16 = 25,
    I32 = 26,
    I64 = 27,
    F64 = 28,
    IQ1_M = 29,
    BF16 = 30,
    TQ1_0 = 34,
    TQ2_0 = 35,
    MXFP4 = 39,
};

// A block is the smallest unit of a row: `block_values` values stored in
// `block_bytes` bytes (1 and the element size for plain types).
struct GgmlTypeTraits {
    GgmlType type;
    std::string_view name; // as ggml prints it: "Q4_K", "F16", ...
    std::uint32_t block_values;
    std::uint32_t block_bytes;
    bool dequantizable; // dequantize_row supports it
};

// nullptr for a number ggml does not (or no longer) define.
const GgmlTypeTraits* find_ggml_type(std::uint32_t raw);
const GgmlTypeTraits& traits(GgmlType type);
std::string_view to_string(GgmlType type);

// The types the engine can compute with (dequantizable_type_names lists
// them): F32, F16, BF16, the blocks of 32 Q4_0, Q4_1, Q5_0, Q5_1, Q8_0,
// IQ4_NL, MXFP4, and the super-blocks Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_XS.
bool is_dequantizable(GgmlType type);
// Their names, comma-separated in ggml's order ("F32, F16, Q4_0, ..."), for
// messages that say what is supported.
std::string dequantizable_type_names();

// Bytes of one row of `row_length` values, and of a whole tensor with ggml
// dims (dims[0] = row length). Throw kvscope::Error when the row length is
// not a whole number of blocks, a dim is zero, or the size overflows 64 bits.
std::uint64_t row_bytes(GgmlType type, std::uint64_t row_length);
std::uint64_t tensor_bytes(GgmlType type, std::span<const std::uint64_t> dims);

// Converts n values (a whole number of blocks) of `type` at src to floats.
// Throws kvscope::Error for a type that is not dequantizable or a partial
// block.
void dequantize_row(GgmlType type, const void* src, float* dst, std::uint64_t n);

} // namespace kvscope
