// Internal to matmul: the activation vector quantized once per call to
// 8-bit blocks, so that dot products with quantized weights run on
// integers (as llama.cpp's Q8_0 / Q8_K activations do). Per block:
// d = max|x| / 127, q = round(x / d); the rounding error is at most d / 2
// per value.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/cpu/simd_path.h"

namespace kvscope::kernels::cpu::detail {

inline constexpr std::size_t kActBlockValues = 32;
inline constexpr std::size_t kActSuperValues = 256;

// Paired with Q8_0, Q4_0 and Q5_0 weights (blocks of 32).
struct ActBlock32 {
    float d;
    std::int8_t qs[kActBlockValues];
};

// Paired with packed Q8_0, Q4_0 and Q5_0 tiles (packed_kernel.h), whose
// codes are stored unsigned with an offset (q + 128, q + 8, q + 16): sum
// is the sum of qs, which removes the offset times the activations' sum.
struct ActBlock32Sum {
    float d;
    std::int32_t sum;
    std::int8_t qs[kActBlockValues];
};

// Paired with the K-quants (super-blocks of 256). bsums[j] is the sum of
// qs[16j .. 16j+15], for the weights' per-sub-block offsets (mins, -32).
struct ActBlock256 {
    float d;
    std::int8_t qs[kActSuperValues];
    std::int16_t bsums[kActSuperValues / 16];
};

// Two consecutive ActBlock32, laid out for AVX-512 VNNI, whose 512-bit
// registers hold two blocks: the codes offset to unsigned (x + 128, the
// operand dpbusd multiplies as unsigned) and each block's scale repeated
// over the 8 int32 lanes its sums land in, so that a pair costs the dot
// product no conversion or shuffle per weight row. A row with an odd number
// of blocks ends in a half pair whose second half is zero.
struct ActPair64 {
    float d[16];
    std::uint8_t u[2 * kActBlockValues];
};

// Blocks of 32 with the sum of their codes: the same d and qs as
// quantize_act32 gives.
void quantize_act32_sum(const float* x, std::size_t n, ActBlock32Sum* out, SimdPath path);

// The `blocks` ActBlock32 at `in` as (blocks + 1) / 2 pairs.
void pair_act32(const ActBlock32* in, std::size_t blocks, ActPair64* out);

// n is a multiple of the block size (the caller checks). Both paths give
// identical blocks: the scale comes from the same float operations and the
// rounding is to nearest even either way.
void quantize_act32(const float* x, std::size_t n, ActBlock32* out, SimdPath path);
void quantize_act256(const float* x, std::size_t n, ActBlock256* out, SimdPath path);

#if defined(KVSCOPE_KERNELS_AVX2)
// One block of n values (a multiple of 32) -> codes q, returning the scale;
// when sums16 is not null, also the sums of each 16 consecutive codes.
// Defined in matmul_avx2.cpp.
float quantize_block_avx2(const float* x, std::size_t n, std::int8_t* q, std::int16_t* sums16);
#endif

} // namespace kvscope::kernels::cpu::detail
