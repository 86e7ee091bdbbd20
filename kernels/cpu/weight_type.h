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
    Q5_0 = 6,
    Q8_0 = 8,
    Q4_K = 12,
    Q5_K = 13,
    Q6_K = 14,
    BF16 = 30,
};

// True when `raw` (a ggml type number) is one of the types above.
bool is_weight_type(std::uint32_t raw);

std::string_view to_string(WeightType type); // "Q4_K", "F16", ...

// Values per block (1 for F32/F16/BF16, 32 for Q8_0/Q4_0/Q5_0, 256 for the
// K-quants) and bytes per block.
std::size_t block_values(WeightType type);
std::size_t block_bytes(WeightType type);

// Bytes of one row of `cols` values. Throws std::invalid_argument when cols
// is not a whole number of blocks.
std::size_t weight_row_bytes(WeightType type, std::size_t cols);

} // namespace kvscope::kernels::cpu
