// Internal to the float tile kernels (packed_float*.cpp): the F16 and BF16
// tile layout's numbers and the per-instruction-set kernels.
//
// Every kernel computes each output with the same float operations in the
// same order, which is what makes them bit-identical (packed_kernel.h):
// per row lane and input, column c is added into chain c % kFloatChains by
// one FMA, chain = w[c] * x[c] + chain (w widened exactly to float, x the
// activation as given), columns in increasing order, chains starting at
// +0; the output is chain 0 + chain 1. Two chains, not one, so that a
// single input (a decode step) keeps two FMAs in flight and the error
// stays within the sum's bound of cols / 2 roundings per chain.
#pragma once

#include <cstddef>

#include "kernels/cpu/packed_kernel.h"

namespace kvscope::kernels::cpu::detail {

// Bytes of one tile column: one 2-byte value for each of the 16 rows.
inline constexpr std::size_t kFloatColumnBytes = kPackedRows * 2;
inline constexpr std::size_t kFloatChains = 2;

#if defined(KVSCOPE_KERNELS_AVX512VNNI)
// zmm kernels: a column is one register of 16 rows.
PackedGemmFn avx512_float_packed_gemm(WeightType type);
#endif
#if defined(KVSCOPE_KERNELS_AVX2)
// ymm kernels: a tile is two 8-row halves, each walked over all columns.
PackedGemmFn avx2_float_packed_gemm(WeightType type);
#endif

} // namespace kvscope::kernels::cpu::detail
