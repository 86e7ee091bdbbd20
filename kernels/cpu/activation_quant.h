// Internal to matmul: the activation vector quantized once per call to
// 8-bit blocks, so that dot products with quantized weights run on
// integers, bit for bit as llama.cpp's x86 CPU backend quantizes them
// (its Q8_0, Q8_1 and Q8_K activations), so that both engines round the
// same values the same way. Per block, with amax = max|x|:
//   q = round(x * (127 / amax)), to nearest even (0 when amax is 0);
//   d = amax / 127 rounded to f16 for the blocks of 32 (Q8_0 / Q8_1 keep
//       d in f16), 1 / (127 / amax) in float for the super-blocks of 256
//       (Q8_K's d = 1 / iscale).
// The represented value d * q is within d / 2 of x, plus the f16 rounding
// of d for blocks of 32: |d - amax / 127| <= max(2^-11 amax / 127, 2^-25).
// Computing q as x / d instead differs from llama.cpp at a few values in
// a million, where x / d lands on a tie that x * (127 / amax) misses (or
// the reverse), and each such code moves every output of its input row by
// up to ~3e-3 of their rms (measured on a llama Q8_0 model's activations).
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/cpu/simd_path.h"

namespace kvscope::kernels::cpu::detail {

inline constexpr std::size_t kActBlockValues = 32;
inline constexpr std::size_t kActSuperValues = 256;

// What the codes are: x times this, rounded (ggml's id, and iscale up to
// its sign). Internal linkage, as float16_encode.h says why: the SIMD
// files compile it too.
namespace {
inline float code_multiplier(float amax) { return amax != 0.0f ? 127.0f / amax : 0.0f; }
} // namespace

// Paired with Q8_0, Q4_0 and Q5_0 weights (blocks of 32).
struct ActBlock32 {
    float d;
    std::int8_t qs[kActBlockValues];
};

// Paired with packed Q8_0, Q4_0 and Q5_0 tiles (packed_kernel.h), whose
// codes are stored unsigned with an offset (q + 128, q + 8, q + 16): sum
// is the sum of qs, which removes the offset times the activations' sum.
// Also with Q4_1 and Q5_1 (packed or not), whose mins multiply s: ggml's
// Q8_1 s, the unrounded amax / 127 times sum, rounded to f16.
struct ActBlock32Sum {
    float d;
    std::int32_t sum;
    float s;
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
// One block of n values (a multiple of 32) -> codes q, returning max|x|;
// when sums16 is not null, also the sums of each 16 consecutive codes.
// Defined in matmul_avx2.cpp.
float quantize_block_avx2(const float* x, std::size_t n, std::int8_t* q, std::int16_t* sums16);
#endif
#if defined(KVSCOPE_KERNELS_NEON)
// The same for the NEON paths, defined in matmul_neon.cpp.
float quantize_block_neon(const float* x, std::size_t n, std::int8_t* q, std::int16_t* sums16);
#endif

} // namespace kvscope::kernels::cpu::detail
