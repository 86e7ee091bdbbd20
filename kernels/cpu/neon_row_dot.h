// Internal to matmul_neon.cpp and matmul_neondot.cpp: the row dot products
// of the quantized weight types against 8-bit activations, written once and
// compiled twice. They differ only in how 16 signed byte products become
// int32 partial sums (`IntDot`): baseline Advanced SIMD's widening
// multiplies (SMULL/SMLAL2 into 16 bits, SADALP into 32), or the dot-product
// extension's SDOT: IntDot::dot16(w, a) gives the 16 products of w[i] * a[i]
// as int32 partial sums, IntDot::dot32(w0, w1, a) the 32 of two vectors
// with the 32 bytes at a. Every integer sum here is exact (|weight code| <= 128,
// activations avoid -128, so a 16-bit pair of products stays below 2^15),
// and each block's or super-block's partial sums are reduced to one exact
// integer before any float arithmetic, so which lanes hold which products
// does not matter: both builds give bit-identical results.
//
// Everything here has internal linkage: each including file gets its own
// copy compiled with its own instruction set, so no SDOT can leak into the
// baseline build through a shared inline function.
#pragma once

#include <arm_neon.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "kernels/cpu/activation_quant.h"
#include "kernels/cpu/k_quant_scales.h"
#include "kernels/cpu/quant_blocks.h"
#include "kernels/cpu/row_dot.h"

namespace kvscope::kernels::cpu::detail {
namespace {

// An f16 at p (any alignment) as a float: one FCVT.
float neon_half(const std::byte* p) {
    __fp16 h;
    std::memcpy(&h, p, 2);
    return static_cast<float>(h);
}

const std::uint8_t* bytes_at(const std::byte* p) { return reinterpret_cast<const std::uint8_t*>(p); }

// 32 codes of a block of 32, values 0-15 and 16-31.
struct Codes32 {
    int8x16_t lo, hi;
};

// 32 four-bit codes: low nibbles are values 0-15, high nibbles 16-31.
Codes32 nibbles32(const std::uint8_t* qs) {
    const uint8x16_t packed = vld1q_u8(qs);
    return {vreinterpretq_s8_u8(vandq_u8(packed, vdupq_n_u8(0x0F))), vreinterpretq_s8_u8(vshrq_n_u8(packed, 4))};
}

// Byte i of the result is 0xFF when bit i of the 32 bits at p is set.
struct Bits32 {
    uint8x16_t lo, hi;
};
Bits32 bits_to_bytes(const std::uint8_t* p) {
    std::uint32_t bits;
    std::memcpy(&bits, p, 4);
    const uint8x16_t spread = vreinterpretq_u8_u32(vdupq_n_u32(bits));
    static constexpr std::uint8_t lo_index[16] = {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1};
    static constexpr std::uint8_t hi_index[16] = {2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3};
    static constexpr std::uint8_t bit[16] = {1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128};
    const uint8x16_t mask = vld1q_u8(bit);
    return {vtstq_u8(vqtbl1q_u8(spread, vld1q_u8(lo_index)), mask),
            vtstq_u8(vqtbl1q_u8(spread, vld1q_u8(hi_index)), mask)};
}

// ---- blocks of 32 --------------------------------------------------------

Codes32 decode_q8_0(const std::byte* block) {
    const auto* qs = reinterpret_cast<const std::int8_t*>(block + offsetof(BlockQ8_0, qs));
    return {vld1q_s8(qs), vld1q_s8(qs + 16)};
}

Codes32 decode_q4_0(const std::byte* block) {
    const Codes32 n = nibbles32(bytes_at(block + offsetof(BlockQ4_0, qs)));
    const int8x16_t eight = vdupq_n_s8(8);
    return {vsubq_s8(n.lo, eight), vsubq_s8(n.hi, eight)};
}

// code - 16 as a signed byte: the nibble with 0xF0 set exactly when the
// fifth bit is clear.
Codes32 decode_q5_0(const std::byte* block) {
    const Codes32 n = nibbles32(bytes_at(block + offsetof(BlockQ5_0, qs)));
    const Bits32 set = bits_to_bytes(bytes_at(block + offsetof(BlockQ5_0, qh)));
    const uint8x16_t f0 = vdupq_n_u8(0xF0);
    return {vorrq_s8(n.lo, vreinterpretq_s8_u8(vbicq_u8(f0, set.lo))),
            vorrq_s8(n.hi, vreinterpretq_s8_u8(vbicq_u8(f0, set.hi)))};
}

Codes32 decode_q4_1(const std::byte* block) { return nibbles32(bytes_at(block + offsetof(BlockQ4_1, qs))); }

Codes32 decode_q5_1(const std::byte* block) {
    const Codes32 n = nibbles32(bytes_at(block + offsetof(BlockQ5_1, qs)));
    const Bits32 set = bits_to_bytes(bytes_at(block + offsetof(BlockQ5_1, qh)));
    const uint8x16_t fifth = vdupq_n_u8(0x10);
    return {vorrq_s8(n.lo, vreinterpretq_s8_u8(vandq_u8(set.lo, fifth))),
            vorrq_s8(n.hi, vreinterpretq_s8_u8(vandq_u8(set.hi, fifth)))};
}

// The nibbles looked up in a 16-entry table of signed values.
Codes32 lookup32(const std::uint8_t* qs, const std::int8_t* table) {
    const Codes32 n = nibbles32(qs);
    const int8x16_t values = vld1q_s8(table);
    return {vqtbl1q_s8(values, vreinterpretq_u8_s8(n.lo)), vqtbl1q_s8(values, vreinterpretq_u8_s8(n.hi))};
}

Codes32 decode_iq4_nl(const std::byte* block) {
    return lookup32(bytes_at(block + offsetof(BlockIQ4_NL, qs)), kIq4nlValues);
}

Codes32 decode_mxfp4(const std::byte* block) {
    return lookup32(bytes_at(block + offsetof(BlockMXFP4, qs)), kMxfp4Values);
}

// A block's scale: the f16 d every type but MXFP4 starts with, or MXFP4's E8M0 e.
template <typename Block>
float block_scale(const std::byte* block) {
    if constexpr (std::is_same_v<Block, BlockMXFP4>)
        return e8m0_half_to_f32(std::to_integer<std::uint8_t>(block[offsetof(BlockMXFP4, e)]));
    else
        return neon_half(block);
}

// Q4_1 and Q5_1 add d * q + m: the activations carry s for the m term.
template <typename Block>
constexpr bool kHasMin = std::is_same_v<Block, BlockQ4_1> || std::is_same_v<Block, BlockQ5_1>;

// Four per-block floats as one vector, lane k from get(k) for k < count,
// zero beyond. Lanes set one by one: an array would be assembled in
// general registers.
template <typename Get>
float32x4_t lanes4(std::size_t count, Get get) {
    float32x4_t v = vdupq_n_f32(0.0f);
    v = vsetq_lane_f32(get(0), v, 0);
    if (count > 1)
        v = vsetq_lane_f32(get(1), v, 1);
    if (count > 2)
        v = vsetq_lane_f32(get(2), v, 2);
    if (count > 3)
        v = vsetq_lane_f32(get(3), v, 3);
    return v;
}

// Four consecutive f16 at `first`, `stride` bytes apart: one widening.
template <std::size_t Stride>
float32x4_t halves4(const std::byte* first) {
    const auto at = [first](std::size_t k) { return reinterpret_cast<const float16_t*>(first + k * Stride); };
    float16x4_t h = vld1_dup_f16(at(0));
    h = vld1_lane_f16(at(1), h, 1);
    h = vld1_lane_f16(at(2), h, 2);
    h = vld1_lane_f16(at(3), h, 3);
    return vcvt_f32_f16(h);
}

// The scales of `count` (1..4) blocks from `first` (kCount: count known
// to be 4), zero beyond: an f16 d or MXFP4's E8M0 e, and Q4_1/Q5_1's m.
template <typename Block, bool kFour>
float32x4_t block_scales4(const std::byte* first, std::size_t count) {
    if constexpr (kFour && !std::is_same_v<Block, BlockMXFP4>)
        return halves4<sizeof(Block)>(first);
    else
        return lanes4(count, [first](std::size_t k) { return block_scale<Block>(first + k * sizeof(Block)); });
}
template <typename Block, bool kFour>
float32x4_t block_mins4(const std::byte* first, std::size_t count) {
    if constexpr (kFour)
        return halves4<sizeof(Block)>(first + offsetof(Block, m));
    else
        return lanes4(count, [first](std::size_t k) { return neon_half(first + k * sizeof(Block) + offsetof(Block, m)); });
}

// Blocks of 32 for N inputs, four blocks per step: each weight block is
// decoded once for all inputs; its exact integer sum per input lands in one
// lane (a pairwise-add tree), and one multiply and one FMA per input apply
// the four blocks' scales (weight d x activation d). The last step, of
// fewer blocks, has zero sums and scales in the missing lanes. Per input
// the operations and their order do not depend on N.
template <typename IntDot, typename Block, int N, bool kFour, typename Act, typename Decode>
void blocks32_step(const std::byte* w, const Act* const* x, std::size_t b, std::size_t count, Decode decode,
                   float32x4_t* acc) {
    if constexpr (kFour)
        count = 4;
    int32x4_t sums[N][4];
    for (std::size_t k = 0; k < 4; ++k) {
        if (k >= count) {
            for (int j = 0; j < N; ++j)
                sums[j][k] = vdupq_n_s32(0);
            continue;
        }
        const Codes32 q = decode(w + (b + k) * sizeof(Block));
        for (int j = 0; j < N; ++j)
            sums[j][k] = IntDot::dot32(q.lo, q.hi, x[j][b + k].qs);
    }
    const std::byte* first = w + b * sizeof(Block);
    const float32x4_t dw = block_scales4<Block, kFour>(first, count);
    for (int j = 0; j < N; ++j) {
        const Act* a = x[j] + b;
        const float32x4_t da = lanes4(count, [a](std::size_t k) { return a[k].d; });
        const int32x4_t isum = vpaddq_s32(vpaddq_s32(sums[j][0], sums[j][1]), vpaddq_s32(sums[j][2], sums[j][3]));
        acc[j] = vfmaq_f32(acc[j], vmulq_f32(dw, da), vcvtq_f32_s32(isum));
        if constexpr (kHasMin<Block>)
            acc[j] = vfmaq_f32(acc[j], block_mins4<Block, kFour>(first, count),
                               lanes4(count, [a](std::size_t k) { return a[k].s; }));
    }
}

template <typename IntDot, typename Block, int N, typename Decode>
void dot_blocks32_n(const std::byte* w, const std::byte* xb, std::size_t x_stride, std::size_t cols,
                    Decode decode, float* out) {
    using Act = std::conditional_t<kHasMin<Block>, ActBlock32Sum, ActBlock32>;
    const Act* x[N];
    float32x4_t acc[N];
    for (int j = 0; j < N; ++j) {
        x[j] = reinterpret_cast<const Act*>(xb + j * x_stride);
        acc[j] = vdupq_n_f32(0.0f);
    }
    const std::size_t blocks = cols / kActBlockValues;
    std::size_t b = 0;
    for (; b + 4 <= blocks; b += 4)
        blocks32_step<IntDot, Block, N, true>(w, x, b, 4, decode, acc);
    if (b < blocks)
        blocks32_step<IntDot, Block, N, false>(w, x, b, blocks - b, decode, acc);
    for (int j = 0; j < N; ++j)
        out[j] = vaddvq_f32(acc[j]);
}

template <typename IntDot, typename Block, typename Decode>
void multi_blocks32(const std::byte* w, const void* x, std::size_t x_stride, std::size_t count, std::size_t cols,
                    float* out, Decode decode) {
    const auto* xb = static_cast<const std::byte*>(x);
    switch (count) {
    case 4: return dot_blocks32_n<IntDot, Block, 4>(w, xb, x_stride, cols, decode, out);
    case 3: return dot_blocks32_n<IntDot, Block, 3>(w, xb, x_stride, cols, decode, out);
    case 2: return dot_blocks32_n<IntDot, Block, 2>(w, xb, x_stride, cols, decode, out);
    default: return dot_blocks32_n<IntDot, Block, 1>(w, xb, x_stride, cols, decode, out);
    }
}

// ---- super-blocks of 256 -------------------------------------------------

// What each K-quant type contributes per super-block and input, given the
// exact integer sum of scale x (codes . activations) over its sub-blocks
// and, for the types with mins, of min x activation sums.
struct SuperTerms {
    int scaled = 0;
    int mins = 0;
};

// Sum over 8 sub-blocks of 32 of m[j] * (bsums[2j] + bsums[2j+1]); exact.
int mins_dot32(const std::uint8_t* m, const ActBlock256& a) {
    const int16x8_t pairs = vpaddq_s16(vld1q_s16(a.bsums), vld1q_s16(a.bsums + 8));
    const int16x8_t mins = vreinterpretq_s16_u16(vmovl_u8(vld1_u8(m)));
    return vaddvq_s32(vmlal_high_s16(vmull_s16(vget_low_s16(mins), vget_low_s16(pairs)), mins, pairs));
}

// Sum over 16 sub-blocks of 16 of m[s] * bsums[s]; exact.
int mins_dot16(int16x8_t m_lo, int16x8_t m_hi, const ActBlock256& a) {
    const int16x8_t b_lo = vld1q_s16(a.bsums), b_hi = vld1q_s16(a.bsums + 8);
    int32x4_t sum = vmull_s16(vget_low_s16(m_lo), vget_low_s16(b_lo));
    sum = vmlal_high_s16(sum, m_lo, b_lo);
    sum = vmlal_s16(sum, vget_low_s16(m_hi), vget_low_s16(b_hi));
    return vaddvq_s32(vmlal_high_s16(sum, m_hi, b_hi));
}

// The exact sums of four sub-blocks' partial sums, one per lane.
int32x4_t lane_sums(int32x4_t s0, int32x4_t s1, int32x4_t s2, int32x4_t s3) {
    return vpaddq_s32(vpaddq_s32(s0, s1), vpaddq_s32(s2, s3));
}

// Q4_K / Q5_K / IQ4_XS: value = d * sc[j] * q (- dmin * m[j]) over sub-block
// j of 32. `codes(block, j)` gives sub-block j's 32 codes. Four sub-blocks'
// sums go into the lanes of one vector, which one multiply-add scales.
template <typename IntDot, int N>
void scaled32_terms(const int* scale, const ActBlock256* const* a, std::size_t b, SuperTerms* t,
                    Codes32 (*codes)(const std::byte*, int), const std::byte* block) {
    int32x4_t total[N];
    for (int j = 0; j < N; ++j)
        total[j] = vdupq_n_s32(0);
    for (int g = 0; g < 2; ++g) {
        int32x4_t sums[N][4];
        for (int k = 0; k < 4; ++k) {
            const Codes32 q = codes(block, 4 * g + k);
            for (int j = 0; j < N; ++j)
                sums[j][k] = IntDot::dot32(q.lo, q.hi, a[j][b].qs + 32 * (4 * g + k));
        }
        const int32x4_t sc = vld1q_s32(scale + 4 * g);
        for (int j = 0; j < N; ++j)
            total[j] = vmlaq_s32(total[j], lane_sums(sums[j][0], sums[j][1], sums[j][2], sums[j][3]), sc);
    }
    for (int j = 0; j < N; ++j)
        t[j].scaled = vaddvq_s32(total[j]);
}

// Q4_K's and Q5_K's sub-block j: chunk j / 2's low (even j) or high nibbles.
Codes32 q4_k_codes(const std::byte* block, int j) {
    const std::uint8_t* qs = bytes_at(block + offsetof(BlockQ4_K, qs)) + 32 * (j / 2);
    const uint8x16_t q0 = vld1q_u8(qs), q1 = vld1q_u8(qs + 16);
    if (j % 2 == 0) {
        const uint8x16_t m4 = vdupq_n_u8(0x0F);
        return {vreinterpretq_s8_u8(vandq_u8(q0, m4)), vreinterpretq_s8_u8(vandq_u8(q1, m4))};
    }
    return {vreinterpretq_s8_u8(vshrq_n_u8(q0, 4)), vreinterpretq_s8_u8(vshrq_n_u8(q1, 4))};
}

// Q5_K adds bit j of qh[l] as the fifth bit of value l of sub-block j.
Codes32 q5_k_codes(const std::byte* block, int j) {
    const std::uint8_t* qs = bytes_at(block + offsetof(BlockQ5_K, qs)) + 32 * (j / 2);
    const std::uint8_t* qh = bytes_at(block + offsetof(BlockQ5_K, qh));
    const uint8x16_t q0 = vld1q_u8(qs), q1 = vld1q_u8(qs + 16);
    const uint8x16_t bit = vdupq_n_u8(static_cast<std::uint8_t>(1u << j));
    const uint8x16_t fifth = vdupq_n_u8(0x10);
    const uint8x16_t h0 = vandq_u8(vtstq_u8(vld1q_u8(qh), bit), fifth);
    const uint8x16_t h1 = vandq_u8(vtstq_u8(vld1q_u8(qh + 16), bit), fifth);
    const uint8x16_t m4 = vdupq_n_u8(0x0F);
    const uint8x16_t n0 = j % 2 == 0 ? vandq_u8(q0, m4) : vshrq_n_u8(q0, 4);
    const uint8x16_t n1 = j % 2 == 0 ? vandq_u8(q1, m4) : vshrq_n_u8(q1, 4);
    return {vreinterpretq_s8_u8(vorrq_u8(n0, h0)), vreinterpretq_s8_u8(vorrq_u8(n1, h1))};
}

Codes32 iq4_xs_codes(const std::byte* block, int j) {
    return lookup32(bytes_at(block + offsetof(BlockIQ4_XS, qs)) + 16 * j, kIq4nlValues);
}

// Q4_K and Q5_K for N inputs:
// dot = d * a.d * sum_j sc[j] (q . a)_j - dmin * a.d * sum_j m[j] sum(a)_j.
template <typename IntDot, typename Block, int N>
void dot_k_scaled_n(const std::byte* w, const std::byte* xb, std::size_t x_stride, std::size_t cols, float* out) {
    const ActBlock256* x[N];
    float sum[N];
    for (int j = 0; j < N; ++j) {
        x[j] = reinterpret_cast<const ActBlock256*>(xb + j * x_stride);
        sum[j] = 0.0f;
    }
    constexpr auto codes = std::is_same_v<Block, BlockQ5_K> ? q5_k_codes : q4_k_codes;
    for (std::size_t b = 0; b < cols / kActSuperValues; ++b) {
        const std::byte* block = w + b * sizeof(Block);
        const KScales s = unpack_k_scales(bytes_at(block + offsetof(Block, scales)));
        int scale[8];
        for (int k = 0; k < 8; ++k)
            scale[k] = s.scale[k];
        SuperTerms t[N];
        scaled32_terms<IntDot, N>(scale, x, b, t, codes, block);
        const float dw = neon_half(block + offsetof(Block, d));
        const float dmin = neon_half(block + offsetof(Block, dmin));
        for (int j = 0; j < N; ++j) {
            const ActBlock256& a = x[j][b];
            t[j].mins = mins_dot32(s.min, a);
            sum[j] += dw * a.d * static_cast<float>(t[j].scaled) - dmin * a.d * static_cast<float>(t[j].mins);
        }
    }
    for (int j = 0; j < N; ++j)
        out[j] = sum[j];
}

// IQ4_XS for N inputs: dot = d * a.d * sum_j sc[j] (q . a)_j.
template <typename IntDot, int N>
void dot_iq4_xs_n(const std::byte* w, const std::byte* xb, std::size_t x_stride, std::size_t cols, float* out) {
    const ActBlock256* x[N];
    float sum[N];
    for (int j = 0; j < N; ++j) {
        x[j] = reinterpret_cast<const ActBlock256*>(xb + j * x_stride);
        sum[j] = 0.0f;
    }
    for (std::size_t b = 0; b < cols / kActSuperValues; ++b) {
        const std::byte* block = w + b * sizeof(BlockIQ4_XS);
        std::uint16_t high;
        std::memcpy(&high, block + offsetof(BlockIQ4_XS, scales_h), 2);
        const std::uint8_t* low = bytes_at(block + offsetof(BlockIQ4_XS, scales_l));
        int scale[8];
        for (int k = 0; k < 8; ++k)
            scale[k] = ((low[k / 2] >> (4 * (k % 2))) & 0x0F) + (((high >> (2 * k)) & 3) << 4) - 32;
        SuperTerms t[N];
        scaled32_terms<IntDot, N>(scale, x, b, t, iq4_xs_codes, block);
        const float dw = neon_half(block + offsetof(BlockIQ4_XS, d));
        for (int j = 0; j < N; ++j)
            sum[j] += dw * x[j][b].d * static_cast<float>(t[j].scaled);
    }
    for (int j = 0; j < N; ++j)
        out[j] = sum[j];
}

// Sub-blocks of 16 (Q6_K, Q2_K, Q3_K): `q[s]` holds sub-block s's codes;
// adds each input's sum_s scale[s] (q . a)_s for sub-blocks s0..s0+7 to its
// total, four sub-blocks per multiply-add as scaled32_terms. Always inlined:
// called per half super-block, its codes would otherwise go through memory.
template <typename IntDot, int N>
[[gnu::always_inline]] inline void scaled16_terms(const int8x16_t* q, const int* scale, int s0, const ActBlock256* const* a, std::size_t b,
                    int32x4_t* total) {
    for (int g = 0; g < 2; ++g) {
        const int32x4_t sc = vld1q_s32(scale + s0 + 4 * g);
        for (int j = 0; j < N; ++j) {
            const std::int8_t* act = a[j][b].qs + 16 * (s0 + 4 * g);
            int32x4_t sums[4];
            for (int k = 0; k < 4; ++k)
                sums[k] = IntDot::dot16(q[4 * g + k], vld1q_s8(act + 16 * k));
            total[j] = vmlaq_s32(total[j], lane_sums(sums[0], sums[1], sums[2], sums[3]), sc);
        }
    }
}

// Q6_K half h (values 128h..128h+127) as 8 vectors of 16 unsigned codes
// (0..63), in value order: low nibbles of ql[0..63] then high nibbles, with
// two bits of qh each (quant_blocks.h). Always inlined (called twice per
// super-block, GCC would call it and pass the codes through memory).
[[gnu::always_inline]] inline void q6_k_half(const std::byte* block, int h, int8x16_t* q) {
    const std::uint8_t* ql = bytes_at(block + offsetof(BlockQ6_K, ql)) + 64 * h;
    const std::uint8_t* qh = bytes_at(block + offsetof(BlockQ6_K, qh)) + 32 * h;
    const uint8x16_t m3 = vdupq_n_u8(0x03), m30 = vdupq_n_u8(0x30);
    for (int v = 0; v < 2; ++v) {
        const uint8x16_t l0 = vld1q_u8(ql + 16 * v), l1 = vld1q_u8(ql + 32 + 16 * v);
        const uint8x16_t hb = vld1q_u8(qh + 16 * v);
        // vsli keeps the destination's low nibble and inserts bits above it
        q[v] = vreinterpretq_s8_u8(vsliq_n_u8(l0, vandq_u8(hb, m3), 4));
        q[2 + v] = vreinterpretq_s8_u8(vsliq_n_u8(l1, vandq_u8(vshrq_n_u8(hb, 2), m3), 4));
        q[4 + v] = vreinterpretq_s8_u8(vorrq_u8(vshrq_n_u8(l0, 4), vandq_u8(hb, m30)));
        q[6 + v] = vreinterpretq_s8_u8(vorrq_u8(vshrq_n_u8(l1, 4), vandq_u8(vshrq_n_u8(hb, 2), m30)));
    }
}

// Q6_K for N inputs: codes offset by 32, so
// dot = d * a.d * (sum_s sc[s] (q . a)_s - 32 sum_s sc[s] bsums[s]).
template <typename IntDot, int N>
void dot_q6_k_n(const std::byte* w, const std::byte* xb, std::size_t x_stride, std::size_t cols, float* out) {
    const ActBlock256* x[N];
    float sum[N];
    for (int j = 0; j < N; ++j) {
        x[j] = reinterpret_cast<const ActBlock256*>(xb + j * x_stride);
        sum[j] = 0.0f;
    }
    for (std::size_t b = 0; b < cols / kActSuperValues; ++b) {
        const std::byte* block = w + b * sizeof(BlockQ6_K);
        const int8x16_t sc8 = vld1q_s8(reinterpret_cast<const std::int8_t*>(block + offsetof(BlockQ6_K, scales)));
        const int16x8_t sc_lo = vmovl_s8(vget_low_s8(sc8)), sc_hi = vmovl_high_s8(sc8);
        int scale[16];
        vst1q_s32(scale, vmovl_s16(vget_low_s16(sc_lo)));
        vst1q_s32(scale + 4, vmovl_high_s16(sc_lo));
        vst1q_s32(scale + 8, vmovl_s16(vget_low_s16(sc_hi)));
        vst1q_s32(scale + 12, vmovl_high_s16(sc_hi));
        int32x4_t total[N];
        for (int j = 0; j < N; ++j)
            total[j] = vdupq_n_s32(0);
        for (int h = 0; h < 2; ++h) {
            int8x16_t q[8];
            q6_k_half(block, h, q);
            scaled16_terms<IntDot, N>(q, scale, 8 * h, x, b, total);
        }
        const float dw = neon_half(block + offsetof(BlockQ6_K, d));
        for (int j = 0; j < N; ++j) {
            const int offset = mins_dot16(sc_lo, sc_hi, x[j][b]);
            sum[j] += dw * x[j][b].d * static_cast<float>(vaddvq_s32(total[j]) - 32 * offset);
        }
    }
    for (int j = 0; j < N; ++j)
        out[j] = sum[j];
}

// Q2_K and Q3_K half h: value 128h + 32k + l (l < 32) is bits 2k of byte
// 32h + l of qs, as 8 vectors of 16 codes in value order. Always inlined,
// as q6_k_half.
[[gnu::always_inline]] inline void low2_half(const std::uint8_t* qs, int h, uint8x16_t* q) {
    const uint8x16_t q0 = vld1q_u8(qs + 32 * h), q1 = vld1q_u8(qs + 32 * h + 16);
    const uint8x16_t m3 = vdupq_n_u8(0x03);
    q[0] = vandq_u8(q0, m3);
    q[1] = vandq_u8(q1, m3);
    q[2] = vandq_u8(vshrq_n_u8(q0, 2), m3);
    q[3] = vandq_u8(vshrq_n_u8(q1, 2), m3);
    q[4] = vandq_u8(vshrq_n_u8(q0, 4), m3);
    q[5] = vandq_u8(vshrq_n_u8(q1, 4), m3);
    q[6] = vshrq_n_u8(q0, 6);
    q[7] = vshrq_n_u8(q1, 6);
}

// Q2_K for N inputs: value = d * sc[s] * q - dmin * m[s] over sub-block s
// of 16 (sc, m: the low and high nibble of scales[s]).
template <typename IntDot, int N>
void dot_q2_k_n(const std::byte* w, const std::byte* xb, std::size_t x_stride, std::size_t cols, float* out) {
    const ActBlock256* x[N];
    float sum[N];
    for (int j = 0; j < N; ++j) {
        x[j] = reinterpret_cast<const ActBlock256*>(xb + j * x_stride);
        sum[j] = 0.0f;
    }
    for (std::size_t b = 0; b < cols / kActSuperValues; ++b) {
        const std::byte* block = w + b * sizeof(BlockQ2_K);
        const std::uint8_t* packed = bytes_at(block + offsetof(BlockQ2_K, scales));
        const uint8x16_t sc = vandq_u8(vld1q_u8(packed), vdupq_n_u8(0x0F));
        const uint16x8_t sc_lo = vmovl_u8(vget_low_u8(sc)), sc_hi = vmovl_high_u8(sc);
        int scale[16];
        vst1q_s32(scale, vreinterpretq_s32_u32(vmovl_u16(vget_low_u16(sc_lo))));
        vst1q_s32(scale + 4, vreinterpretq_s32_u32(vmovl_high_u16(sc_lo)));
        vst1q_s32(scale + 8, vreinterpretq_s32_u32(vmovl_u16(vget_low_u16(sc_hi))));
        vst1q_s32(scale + 12, vreinterpretq_s32_u32(vmovl_high_u16(sc_hi)));
        int32x4_t total[N];
        for (int j = 0; j < N; ++j)
            total[j] = vdupq_n_s32(0);
        for (int h = 0; h < 2; ++h) {
            uint8x16_t u[8];
            low2_half(bytes_at(block + offsetof(BlockQ2_K, qs)), h, u);
            int8x16_t q[8];
            for (int v = 0; v < 8; ++v)
                q[v] = vreinterpretq_s8_u8(u[v]);
            scaled16_terms<IntDot, N>(q, scale, 8 * h, x, b, total);
        }
        const uint8x16_t m = vshrq_n_u8(vld1q_u8(packed), 4);
        const int16x8_t m_lo = vreinterpretq_s16_u16(vmovl_u8(vget_low_u8(m)));
        const int16x8_t m_hi = vreinterpretq_s16_u16(vmovl_high_u8(m));
        const float dw = neon_half(block + offsetof(BlockQ2_K, d));
        const float dmin = neon_half(block + offsetof(BlockQ2_K, dmin));
        for (int j = 0; j < N; ++j) {
            const ActBlock256& a = x[j][b];
            const int mins = mins_dot16(m_lo, m_hi, a);
            sum[j] += dw * a.d * static_cast<float>(vaddvq_s32(total[j])) - dmin * a.d * static_cast<float>(mins);
        }
    }
    for (int j = 0; j < N; ++j)
        out[j] = sum[j];
}

// Q3_K for N inputs: value = d * sc[s] * q, q = low2 - 4 where the value's
// hmask bit is clear (bit 4h + k of hmask[l] for value 128h + 32k + l).
template <typename IntDot, int N>
void dot_q3_k_n(const std::byte* w, const std::byte* xb, std::size_t x_stride, std::size_t cols, float* out) {
    const ActBlock256* x[N];
    float sum[N];
    for (int j = 0; j < N; ++j) {
        x[j] = reinterpret_cast<const ActBlock256*>(xb + j * x_stride);
        sum[j] = 0.0f;
    }
    for (std::size_t b = 0; b < cols / kActSuperValues; ++b) {
        const std::byte* block = w + b * sizeof(BlockQ3_K);
        int scale[16];
        unpack_q3k_scales(bytes_at(block + offsetof(BlockQ3_K, scales)), scale);
        const std::uint8_t* hmask = bytes_at(block + offsetof(BlockQ3_K, hmask));
        const uint8x16_t hm[2] = {vld1q_u8(hmask), vld1q_u8(hmask + 16)};
        const uint8x16_t fc = vdupq_n_u8(0xFC);
        int32x4_t total[N];
        for (int j = 0; j < N; ++j)
            total[j] = vdupq_n_s32(0);
        for (int h = 0; h < 2; ++h) {
            uint8x16_t u[8];
            low2_half(bytes_at(block + offsetof(BlockQ3_K, qs)), h, u);
            int8x16_t q[8];
            for (int v = 0; v < 8; ++v) {
                const uint8x16_t set = vtstq_u8(hm[v % 2], vdupq_n_u8(static_cast<std::uint8_t>(1u << (4 * h + v / 2))));
                // low2 - 4 as a signed byte is low2 | 0xFC (low2 <= 3)
                q[v] = vreinterpretq_s8_u8(vorrq_u8(u[v], vbicq_u8(fc, set)));
            }
            scaled16_terms<IntDot, N>(q, scale, 8 * h, x, b, total);
        }
        const float dw = neon_half(block + offsetof(BlockQ3_K, d));
        for (int j = 0; j < N; ++j)
            sum[j] += dw * x[j][b].d * static_cast<float>(vaddvq_s32(total[j]));
    }
    for (int j = 0; j < N; ++j)
        out[j] = sum[j];
}

// The K-quant kernels: two inputs per pass (the decoded codes of a half
// super-block stay in registers beside the two inputs' sums).
template <template <typename, int> class Kernel, typename IntDot>
void multi_super(const std::byte* w, const void* x, std::size_t x_stride, std::size_t count, std::size_t cols,
                 float* out) {
    const auto* xb = static_cast<const std::byte*>(x);
    if (count == 2)
        Kernel<IntDot, 2>::run(w, xb, x_stride, cols, out);
    else
        Kernel<IntDot, 1>::run(w, xb, x_stride, cols, out);
}

template <typename IntDot, int N>
struct Q4KKernel {
    static void run(const std::byte* w, const std::byte* x, std::size_t s, std::size_t cols, float* out) {
        dot_k_scaled_n<IntDot, BlockQ4_K, N>(w, x, s, cols, out);
    }
};
template <typename IntDot, int N>
struct Q5KKernel {
    static void run(const std::byte* w, const std::byte* x, std::size_t s, std::size_t cols, float* out) {
        dot_k_scaled_n<IntDot, BlockQ5_K, N>(w, x, s, cols, out);
    }
};
template <typename IntDot, int N>
struct Q6KKernel {
    static void run(const std::byte* w, const std::byte* x, std::size_t s, std::size_t cols, float* out) {
        dot_q6_k_n<IntDot, N>(w, x, s, cols, out);
    }
};
template <typename IntDot, int N>
struct Q2KKernel {
    static void run(const std::byte* w, const std::byte* x, std::size_t s, std::size_t cols, float* out) {
        dot_q2_k_n<IntDot, N>(w, x, s, cols, out);
    }
};
template <typename IntDot, int N>
struct Q3KKernel {
    static void run(const std::byte* w, const std::byte* x, std::size_t s, std::size_t cols, float* out) {
        dot_q3_k_n<IntDot, N>(w, x, s, cols, out);
    }
};
template <typename IntDot, int N>
struct IQ4XSKernel {
    static void run(const std::byte* w, const std::byte* x, std::size_t s, std::size_t cols, float* out) {
        dot_iq4_xs_n<IntDot, N>(w, x, s, cols, out);
    }
};

// The single-input dot product is the multi-input kernel with one input:
// one copy of each kernel, and matvec and matmul agree bit for bit.
template <RowDotMulti Multi>
float single_input(const std::byte* w, const void* x, std::size_t cols) {
    float out = 0.0f;
    Multi(w, x, 0, 1, cols, &out);
    return out;
}

// The blocks-of-32 types; a lambda, not the function pointer, so that the
// decoding is inlined into the block loop.
template <typename IntDot>
void multi_q8_0(const std::byte* w, const void* x, std::size_t s, std::size_t c, std::size_t cols, float* out) {
    multi_blocks32<IntDot, BlockQ8_0>(w, x, s, c, cols, out, [](const std::byte* b) { return decode_q8_0(b); });
}
template <typename IntDot>
void multi_q4_0(const std::byte* w, const void* x, std::size_t s, std::size_t c, std::size_t cols, float* out) {
    multi_blocks32<IntDot, BlockQ4_0>(w, x, s, c, cols, out, [](const std::byte* b) { return decode_q4_0(b); });
}
template <typename IntDot>
void multi_q5_0(const std::byte* w, const void* x, std::size_t s, std::size_t c, std::size_t cols, float* out) {
    multi_blocks32<IntDot, BlockQ5_0>(w, x, s, c, cols, out, [](const std::byte* b) { return decode_q5_0(b); });
}
template <typename IntDot>
void multi_q4_1(const std::byte* w, const void* x, std::size_t s, std::size_t c, std::size_t cols, float* out) {
    multi_blocks32<IntDot, BlockQ4_1>(w, x, s, c, cols, out, [](const std::byte* b) { return decode_q4_1(b); });
}
template <typename IntDot>
void multi_q5_1(const std::byte* w, const void* x, std::size_t s, std::size_t c, std::size_t cols, float* out) {
    multi_blocks32<IntDot, BlockQ5_1>(w, x, s, c, cols, out, [](const std::byte* b) { return decode_q5_1(b); });
}
template <typename IntDot>
void multi_iq4_nl(const std::byte* w, const void* x, std::size_t s, std::size_t c, std::size_t cols, float* out) {
    multi_blocks32<IntDot, BlockIQ4_NL>(w, x, s, c, cols, out, [](const std::byte* b) { return decode_iq4_nl(b); });
}
template <typename IntDot>
void multi_mxfp4(const std::byte* w, const void* x, std::size_t s, std::size_t c, std::size_t cols, float* out) {
    multi_blocks32<IntDot, BlockMXFP4>(w, x, s, c, cols, out, [](const std::byte* b) { return decode_mxfp4(b); });
}

// Every quantized type's multi-input kernel and how many inputs it takes
// at once (the float types are matmul_neon.cpp's own).
template <typename IntDot>
RowDotMultiFn quantized_row_dot_multi(WeightType type) {
    switch (type) {
    case WeightType::Q8_0: return {multi_q8_0<IntDot>, 4};
    case WeightType::Q4_0: return {multi_q4_0<IntDot>, 4};
    case WeightType::Q5_0: return {multi_q5_0<IntDot>, 4};
    case WeightType::Q4_1: return {multi_q4_1<IntDot>, 4};
    case WeightType::Q5_1: return {multi_q5_1<IntDot>, 4};
    case WeightType::IQ4_NL: return {multi_iq4_nl<IntDot>, 4};
    case WeightType::MXFP4: return {multi_mxfp4<IntDot>, 4};
    case WeightType::Q2_K: return {multi_super<Q2KKernel, IntDot>, 2};
    case WeightType::Q3_K: return {multi_super<Q3KKernel, IntDot>, 2};
    case WeightType::Q4_K: return {multi_super<Q4KKernel, IntDot>, 2};
    case WeightType::Q5_K: return {multi_super<Q5KKernel, IntDot>, 2};
    case WeightType::Q6_K: return {multi_super<Q6KKernel, IntDot>, 2};
    case WeightType::IQ4_XS: return {multi_super<IQ4XSKernel, IntDot>, 2};
    default: return {};
    }
}

// The same kernels for one input.
template <typename IntDot>
RowDot quantized_row_dot(WeightType type) {
    switch (type) {
    case WeightType::Q8_0: return single_input<multi_q8_0<IntDot>>;
    case WeightType::Q4_0: return single_input<multi_q4_0<IntDot>>;
    case WeightType::Q5_0: return single_input<multi_q5_0<IntDot>>;
    case WeightType::Q4_1: return single_input<multi_q4_1<IntDot>>;
    case WeightType::Q5_1: return single_input<multi_q5_1<IntDot>>;
    case WeightType::IQ4_NL: return single_input<multi_iq4_nl<IntDot>>;
    case WeightType::MXFP4: return single_input<multi_mxfp4<IntDot>>;
    case WeightType::Q2_K: return single_input<multi_super<Q2KKernel, IntDot>>;
    case WeightType::Q3_K: return single_input<multi_super<Q3KKernel, IntDot>>;
    case WeightType::Q4_K: return single_input<multi_super<Q4KKernel, IntDot>>;
    case WeightType::Q5_K: return single_input<multi_super<Q5KKernel, IntDot>>;
    case WeightType::Q6_K: return single_input<multi_super<Q6KKernel, IntDot>>;
    case WeightType::IQ4_XS: return single_input<multi_super<IQ4XSKernel, IntDot>>;
    default: return nullptr;
    }
}

} // namespace
} // namespace kvscope::kernels::cpu::detail
