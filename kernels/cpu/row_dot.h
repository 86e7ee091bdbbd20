// Internal to matmul: the dot product of one weight row with one prepared
// activation row, per weight type and SIMD path.
#pragma once

#include <cstddef>

#include "kernels/cpu/simd_path.h"
#include "kernels/cpu/weight_type.h"

namespace kvscope::kernels::cpu::detail {

// How the activation row is prepared for a weight type.
enum class ActFormat {
    F32,    // the floats as given (F32, F16, BF16 weights)
    Q8x32,  // ActBlock32[cols / 32]   (Q8_0, Q4_0, Q5_0)
    Q8x256, // ActBlock256[cols / 256] (Q4_K, Q5_K, Q6_K)
};

ActFormat act_format(WeightType type);

// Bytes of one prepared activation row of `cols` values.
std::size_t act_row_bytes(WeightType type, std::size_t cols);

// w: one row of `cols` values in the weight format (no alignment needed);
// x: the prepared activation row. cols is a whole number of blocks.
using RowDot = float (*)(const std::byte* w, const void* x, std::size_t cols);

RowDot scalar_row_dot(WeightType type);
#if defined(KVSCOPE_KERNELS_AVX2)
RowDot avx2_row_dot(WeightType type);
#endif

RowDot row_dot(WeightType type, SimdPath path);

} // namespace kvscope::kernels::cpu::detail
