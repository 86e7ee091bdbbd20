// Internal to matmul_avx2.cpp and matmul_avxvnni.cpp, the two files built
// with AVX2 code generation: the row dot products of the blocks-of-32 weight
// types (Q8_0, Q4_0, Q5_0, MXFP4) against 8-bit activations, written once and
// compiled twice (matmul_avx512vnni.cpp reuses the weight decoding). They
// differ only in how 32 unsigned x signed byte products become 8 int32
// sums (`IntDot`): AVX2's maddubs + madd, or AVX-VNNI's single dpbusd. Both sums are exact (|w| <= 128 and activations
// avoid -128, so maddubs never saturates), so both builds give bit-identical
// results and the choice is invisible except in speed.
//
// Everything here has internal linkage: each including file gets its own
// copy compiled with its own instruction set, so no VNNI instruction can
// leak into the AVX2 build through a shared inline function.
#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "kernels/cpu/activation_quant.h"
#include "kernels/cpu/avx2_hsum.h"
#include "kernels/cpu/quant_blocks.h"
#include "kernels/cpu/row_dot.h"

namespace kvscope::kernels::cpu::detail {
namespace {

float half(const std::byte* p) {
    std::uint16_t bits;
    std::memcpy(&bits, p, 2);
    return _cvtsh_ss(bits);
}

// A block's scale: the f16 d every type but MXFP4 starts with, or
// MXFP4's E8M0 e.
template <typename Block>
float block_scale(const std::byte* block) {
    if constexpr (std::is_same_v<Block, BlockMXFP4>)
        return e8m0_half_to_f32(std::to_integer<std::uint8_t>(block[offsetof(BlockMXFP4, e)]));
    else
        return half(block);
}

__m256i load256(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }
__m128i load128(const void* p) { return _mm_loadu_si128(static_cast<const __m128i*>(p)); }

// 32 four-bit codes: byte i of the result is value i (low nibbles first).
__m256i nibbles32(const std::uint8_t* qs) {
    const __m128i packed = load128(qs);
    const __m128i mask = _mm_set1_epi8(0x0F);
    const __m128i lo = _mm_and_si128(packed, mask);
    const __m128i hi = _mm_and_si128(_mm_srli_epi16(packed, 4), mask);
    return _mm256_set_m128i(hi, lo);
}

// Byte i of the result is 0xFF when bit i of the 32 bits at p is set.
__m256i bits_to_bytes(const std::uint8_t* p) {
    std::uint32_t bits;
    std::memcpy(&bits, p, 4);
    const __m256i spread = _mm256_shuffle_epi8(
        _mm256_set1_epi32(static_cast<int>(bits)),
        _mm256_set_epi64x(0x0303030303030303, 0x0202020202020202, 0x0101010101010101, 0));
    const __m256i all_but_bit = _mm256_set1_epi64x(0x7FBFDFEFF7FBFDFE);
    return _mm256_cmpeq_epi8(_mm256_or_si256(spread, all_but_bit), _mm256_set1_epi64x(-1));
}

// Blocks of 32 signed codes for N inputs: each weight block is decoded once
// (and its magnitudes taken once). Per input two accumulators, since with
// one the 4-cycle FMA latency chain, not memory, would bound the speed; the
// operations and their order do not depend on N. IntDot::sums(u, s) gives
// the 8 int32 sums of 4 neighbouring products u[i] * s[i].
template <typename IntDot, typename Block, int N, typename Decode>
void dot_blocks32_n(const std::byte* w, const std::byte* xb, std::size_t x_stride,
                    std::size_t cols, Decode decode, float* out) {
    const ActBlock32* x[N];
    __m256 acc[N][2];
    for (int j = 0; j < N; ++j) {
        x[j] = reinterpret_cast<const ActBlock32*>(xb + j * x_stride);
        acc[j][0] = acc[j][1] = _mm256_setzero_ps();
    }
    const auto block_terms = [&](std::size_t b, int k) {
        const std::byte* block = w + b * sizeof(Block);
        const float dw = block_scale<Block>(block);
        const __m256i q = decode(block);
        const __m256i mag = _mm256_sign_epi8(q, q);
        for (int j = 0; j < N; ++j) {
            const __m256 scale = _mm256_set1_ps(dw * x[j][b].d);
            const __m256i sums = IntDot::sums(mag, _mm256_sign_epi8(load256(x[j][b].qs), q));
            acc[j][k] = _mm256_fmadd_ps(scale, _mm256_cvtepi32_ps(sums), acc[j][k]);
        }
    };
    const std::size_t blocks = cols / kActBlockValues;
    std::size_t b = 0;
    for (; b + 2 <= blocks; b += 2) {
        block_terms(b, 0);
        block_terms(b + 1, 1);
    }
    if (b < blocks)
        block_terms(b, 0);
    for (int j = 0; j < N; ++j)
        out[j] = hsum(_mm256_add_ps(acc[j][0], acc[j][1]));
}

template <typename IntDot, typename Block, typename Decode>
void multi_blocks32(const std::byte* w, const void* x, std::size_t x_stride, std::size_t count,
                    std::size_t cols, float* out, Decode decode) {
    const auto* xb = static_cast<const std::byte*>(x);
    switch (count) {
    case 4: return dot_blocks32_n<IntDot, Block, 4>(w, xb, x_stride, cols, decode, out);
    case 3: return dot_blocks32_n<IntDot, Block, 3>(w, xb, x_stride, cols, decode, out);
    case 2: return dot_blocks32_n<IntDot, Block, 2>(w, xb, x_stride, cols, decode, out);
    default: return dot_blocks32_n<IntDot, Block, 1>(w, xb, x_stride, cols, decode, out);
    }
}

__m256i decode_q8_0(const std::byte* block) { return load256(block + offsetof(BlockQ8_0, qs)); }

__m256i decode_q4_0(const std::byte* block) {
    const auto* qs = reinterpret_cast<const std::uint8_t*>(block + offsetof(BlockQ4_0, qs));
    return _mm256_sub_epi8(nibbles32(qs), _mm256_set1_epi8(8));
}

// code - 16 as a signed byte: the nibble with 0xF0 set exactly when the
// fifth bit is clear.
__m256i decode_q5_0(const std::byte* block) {
    const auto* qs = reinterpret_cast<const std::uint8_t*>(block + offsetof(BlockQ5_0, qs));
    const auto* qh = reinterpret_cast<const std::uint8_t*>(block + offsetof(BlockQ5_0, qh));
    const __m256i high = _mm256_andnot_si256(bits_to_bytes(qh), _mm256_set1_epi8(static_cast<char>(0xF0)));
    return _mm256_or_si256(nibbles32(qs), high);
}

// MXFP4's signed values, looked up from the nibbles. Inline: unused in
// matmul_avx512vnni.cpp (no MXFP4 kernel there), which would warn.
inline __m256i decode_mxfp4(const std::byte* block) {
    const auto* qs = reinterpret_cast<const std::uint8_t*>(block + offsetof(BlockMXFP4, qs));
    const __m128i table = _mm_loadu_si128(reinterpret_cast<const __m128i*>(kMxfp4Values));
    return _mm256_shuffle_epi8(_mm256_broadcastsi128_si256(table), nibbles32(qs));
}

template <typename IntDot>
void multi_q8_0(const std::byte* w, const void* x, std::size_t s, std::size_t c, std::size_t cols, float* out) {
    // a lambda, not the function pointer: inlined into the block loop
    multi_blocks32<IntDot, BlockQ8_0>(w, x, s, c, cols, out, [](const std::byte* b) { return decode_q8_0(b); });
}
template <typename IntDot>
void multi_q4_0(const std::byte* w, const void* x, std::size_t s, std::size_t c, std::size_t cols, float* out) {
    // a lambda, not the function pointer: inlined into the block loop
    multi_blocks32<IntDot, BlockQ4_0>(w, x, s, c, cols, out, [](const std::byte* b) { return decode_q4_0(b); });
}
template <typename IntDot>
void multi_q5_0(const std::byte* w, const void* x, std::size_t s, std::size_t c, std::size_t cols, float* out) {
    // a lambda, not the function pointer: inlined into the block loop
    multi_blocks32<IntDot, BlockQ5_0>(w, x, s, c, cols, out, [](const std::byte* b) { return decode_q5_0(b); });
}

template <typename IntDot>
void multi_mxfp4(const std::byte* w, const void* x, std::size_t s, std::size_t c, std::size_t cols, float* out) {
    // a lambda, not the function pointer: inlined into the block loop
    multi_blocks32<IntDot, BlockMXFP4>(w, x, s, c, cols, out, [](const std::byte* b) { return decode_mxfp4(b); });
}

// The single-input dot product is the multi-input kernel with one input:
// one copy of each kernel, and matvec and matmul agree bit for bit.
template <RowDotMulti Multi>
float single_input(const std::byte* w, const void* x, std::size_t cols) {
    float out = 0.0f;
    Multi(w, x, 0, 1, cols, &out);
    return out;
}

} // namespace
} // namespace kvscope::kernels::cpu::detail
