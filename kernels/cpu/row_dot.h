// Internal to matmul: the dot product of one weight row with one prepared
// activation row, per weight type and SIMD path.
#pragma once

#include <cstddef>

#include "kernels/cpu/simd_path.h"
#include "kernels/cpu/weight_type.h"

namespace kvscope::kernels::cpu::detail {

// How the activation row is prepared for a weight type.
enum class ActFormat {
    F32,        // the floats as given (F32, F16, BF16 weights)
    Q8x32,      // ActBlock32[cols / 32]   (Q8_0, Q4_0, Q5_0, IQ4_NL, MXFP4)
    Q8x256,     // ActBlock256[cols / 256] (Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_XS)
    Q8x32Pairs, // ActPair64[(cols / 32 + 1) / 2] (Q8_0, Q4_0, Q5_0 on AVX-512 VNNI)
    Q8x32Sums,  // ActBlock32Sum[cols / 32] (Q4_1, Q5_1; packed blocks-of-32 tiles)
};
inline constexpr std::size_t kActFormats = static_cast<std::size_t>(ActFormat::Q8x32Sums) + 1;

ActFormat act_format(WeightType type, SimdPath path);

// Bytes of one prepared activation row of `cols` values.
std::size_t act_row_bytes(ActFormat format, std::size_t cols);

// w: one row of `cols` values in the weight format (no alignment needed);
// x: the prepared activation row. cols is a whole number of blocks.
using RowDot = float (*)(const std::byte* w, const void* x, std::size_t cols);

RowDot scalar_row_dot(WeightType type);
#if defined(KVSCOPE_KERNELS_AVX2)
RowDot avx2_row_dot(WeightType type);
#endif
#if defined(KVSCOPE_KERNELS_AVXVNNI)
// The blocks-of-32 types (Q8_0, Q4_0, Q5_0, MXFP4) with AVX-VNNI, bit-identical to
// avx2_row_dot and used in its place on the AVX2 path; null for the other
// types and on CPUs without AVX-VNNI.
RowDot avxvnni_row_dot(WeightType type);
#endif

#if defined(KVSCOPE_KERNELS_NEON)
// Every weight type on the NEON paths (F32, F16, BF16 and every quantized
// type); the quantized kernels use baseline widening multiplies.
RowDot neon_row_dot(WeightType type);
#endif
#if defined(KVSCOPE_KERNELS_NEON_DOTPROD)
// The quantized types with SDOT, bit-identical to neon_row_dot and used in
// its place on the NeonDot and NeonI8mm paths; null for the float types.
RowDot neondot_row_dot(WeightType type);
#endif

#if defined(KVSCOPE_KERNELS_AVX512VNNI)
// Whether this CPU runs the AVX-512 VNNI kernels: the blocks-of-32 types
// on the AVX2 path then use them, with ActPair64 activations. Their
// results are bit-identical to avx2_row_dot's on ActBlock32 activations.
bool avx512vnni_available();
RowDot avx512vnni_row_dot(WeightType type);
#endif

RowDot row_dot(WeightType type, SimdPath path);

// out[j] = dot(w, x row j) for j < count, x rows `x_stride` bytes apart:
// one weight row against several inputs, each weight block decoded once
// and reused for all of them. Each out[j] is bit-identical to what the
// same path's RowDot gives for x row j alone. count is 1..max_inputs.
using RowDotMulti = void (*)(const std::byte* w, const void* x, std::size_t x_stride,
                             std::size_t count, std::size_t cols, float* out);

// No multi-input kernel takes more inputs at once than this.
inline constexpr std::size_t kMaxMultiInputs = 8;

struct RowDotMultiFn {
    RowDotMulti fn = nullptr; // null: the type has none on this path
    std::size_t max_inputs = 1;
};

#if defined(KVSCOPE_KERNELS_AVX2)
RowDotMultiFn avx2_row_dot_multi(WeightType type);
#endif
#if defined(KVSCOPE_KERNELS_AVXVNNI)
RowDotMultiFn avxvnni_row_dot_multi(WeightType type);
#endif
#if defined(KVSCOPE_KERNELS_AVX512VNNI)
RowDotMultiFn avx512vnni_row_dot_multi(WeightType type);
#endif
#if defined(KVSCOPE_KERNELS_NEON)
RowDotMultiFn neon_row_dot_multi(WeightType type);
#endif
#if defined(KVSCOPE_KERNELS_NEON_DOTPROD)
RowDotMultiFn neondot_row_dot_multi(WeightType type);
#endif

RowDotMultiFn row_dot_multi(WeightType type, SimdPath path);

} // namespace kvscope::kernels::cpu::detail
