// The weight formats matvec/matmul compute with, numbered as ggml numbers
// them in GGUF files, and the byte geometry of their rows.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace kvscope::kernels::cpu {

enum class WeightType : std::uint32_t {
    F32 = 0,
    F16 = 1,
    Q4_0 = 2,
    Q4_1 = 3,
    Q5_0 = 6,
    Q5_1 = 7,
    Q8_0 = 8,
    Q2_K = 10,
    Q3_K = 11,
    Q4_K = 12,
    Q5_K = 13,
    Q6_K = 14,
    IQ4_NL = 20,
    IQ4_XS = 23,
    BF16 = 30,
    MXFP4 = 39,
};

// Every WeightType, in ggml's numbering order.
inline constexpr WeightType kWeightTypes[] = {
    WeightType::F32,  WeightType::F16,  WeightType::Q4_0, WeightType::Q4_1,   WeightType::Q5_0,
    WeightType::Q5_1, WeightType::Q8_0, WeightType::Q2_K, WeightType::Q3_K,   WeightType::Q4_K,
    WeightType::Q5_K, WeightType::Q6_K, WeightType::IQ4_NL, WeightType::IQ4_XS, WeightType::BF16,
    WeightType::MXFP4,
};

// True when `raw` (a ggml type number) is one of the types above.
bool is_weight_type(std::uint32_t raw);

std::string_view to_string(WeightType type); // "Q4_K", "F16", ...

// Values per block (1 for F32/F16/BF16, 32 for Q8_0, Q4_0, Q4_1, Q5_0,
// Q5_1, IQ4_NL, MXFP4, 256 for the K-quants and IQ4_XS) and bytes per block.
std::size_t block_values(WeightType type);
std::size_t block_bytes(WeightType type);

// Bytes of one row of `cols` values. Throws std::invalid_argument when cols
// is not a whole number of blocks.
std::size_t weight_row_bytes(WeightType type, std::size_t cols);

} // namespace kvscope::kernels::cpu
