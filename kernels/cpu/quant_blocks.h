// ggml's quantized block formats, byte for byte as llama.cpp writes them
// into GGUF files, and their dequantization to float.
//
// A row of n values is n / kValues consecutive blocks. All fields are
// little-endian; "f16" fields hold IEEE binary16 bits. The structs only
// document the layouts (their sizes are checked); the code reads blocks with
// memcpy, so source pointers need no alignment.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>

namespace kvscope::kernels::cpu {

inline constexpr std::size_t kQuantBlockValues = 32; // Q8_0, Q4_0, Q5_0, Q4_1, Q5_1, IQ4_NL, MXFP4
inline constexpr std::size_t kSuperBlockValues = 256; // the K-quants and IQ4_XS
inline constexpr std::size_t kKScaleBytes = 12;        // Q4_K/Q5_K packed scales+mins

// value[i] = qs[i] * d
struct BlockQ8_0 {
    std::uint16_t d;
    std::int8_t qs[kQuantBlockValues];
};

// value[i]      = ((qs[i] & 0x0F) - 8) * d   for i < 16
// value[i + 16] = ((qs[i] >> 4)   - 8) * d
struct BlockQ4_0 {
    std::uint16_t d;
    std::uint8_t qs[kQuantBlockValues / 2];
};

// As Q4_0 but 5-bit: bit i of the little-endian u32 qh is the fifth bit of
// value i, and the offset is 16 instead of 8.
struct BlockQ5_0 {
    std::uint16_t d;
    std::uint8_t qh[4];
    std::uint8_t qs[kQuantBlockValues / 2];
};

// value[i]      = (qs[i] & 0x0F) * d + m   for i < 16
// value[i + 16] = (qs[i] >> 4)   * d + m
struct BlockQ4_1 {
    std::uint16_t d;
    std::uint16_t m;
    std::uint8_t qs[kQuantBlockValues / 2];
};

// As Q4_1 with Q5_0's fifth bits: code = nibble | (bit i of qh) << 4,
// value = code * d + m.
struct BlockQ5_1 {
    std::uint16_t d;
    std::uint16_t m;
    std::uint8_t qh[4];
    std::uint8_t qs[kQuantBlockValues / 2];
};

// The 16 values of the non-linear 4-bit types (IQ4_NL, IQ4_XS): a code
// indexes this table, denser near zero where weights cluster.
inline constexpr std::int8_t kIq4nlValues[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                                 1,    13,   25,  38,  53,  69,  89,  113};

// As Q4_0 with codes mapped through kIq4nlValues:
// value[i] = kIq4nlValues[qs[i] & 0x0F] * d, value[i + 16] from qs[i] >> 4.
struct BlockIQ4_NL {
    std::uint16_t d;
    std::uint8_t qs[kQuantBlockValues / 2];
};

// MXFP4 (OCP microscaling FP4): the 16 FP4 E2M1 values (sign, 2 exponent
// bits, 1 mantissa bit: 0, 0.5, 1, 1.5, 2, 3, 4, 6 and their negatives),
// doubled so that they are integers, as ggml's kvalues_mxfp4. Code 8 is
// E2M1's -0.
inline constexpr std::int8_t kMxfp4Values[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

// As Q4_0's nibbles with codes mapped through kMxfp4Values and one E8M0
// scale e, the power of two 2^(e - 127) (e = 255, NaN in the OCP format,
// read as a number, as ggml does):
// value[i] = kMxfp4Values[qs[i] & 0x0F] * 2^(e - 128), value[i + 16]
// from qs[i] >> 4 (the table's doubling undone by the halved scale).
struct BlockMXFP4 {
    std::uint8_t e;
    std::uint8_t qs[kQuantBlockValues / 2];
};

// 8 sub-blocks of 32 values, each with a 6-bit scale sc[j] and a 6-bit min
// m[j] packed into `scales` (see unpack_k_scale_min in the .cpp). Values are
// 64 at a time: for chunk c (0..3) and l < 32,
//   value[64c + l]      = d * sc[2c]   * (qs[32c + l] & 0x0F) - dmin * m[2c]
//   value[64c + 32 + l] = d * sc[2c+1] * (qs[32c + l] >> 4)   - dmin * m[2c+1]
struct BlockQ4_K {
    std::uint16_t d;
    std::uint16_t dmin;
    std::uint8_t scales[kKScaleBytes];
    std::uint8_t qs[kSuperBlockValues / 2];
};

// As Q4_K with a fifth bit per value: for chunk c, bit 2c of qh[l] belongs
// to value 64c + l and bit 2c+1 to value 64c + 32 + l.
struct BlockQ5_K {
    std::uint16_t d;
    std::uint16_t dmin;
    std::uint8_t scales[kKScaleBytes];
    std::uint8_t qh[kSuperBlockValues / 8];
    std::uint8_t qs[kSuperBlockValues / 2];
};

// 16 sub-blocks of 16 values with signed 8-bit scales; 6-bit quants offset
// by 32, split into 4 low bits (ql) and 2 high bits (qh). For half h (0..1,
// 128 values each) and l < 32, with L = ql + 64h and H = qh + 32h:
//   value[128h + l]      low L[l] & 0x0F,    high (H[l] >> 0) & 3
//   value[128h + 32 + l] low L[l + 32] & 0x0F, high (H[l] >> 2) & 3
//   value[128h + 64 + l] low L[l] >> 4,      high (H[l] >> 4) & 3
//   value[128h + 96 + l] low L[l + 32] >> 4, high (H[l] >> 6) & 3
// and value[i] = d * scales[i / 16] * (q - 32).
struct BlockQ6_K {
    std::uint8_t ql[kSuperBlockValues / 2];
    std::uint8_t qh[kSuperBlockValues / 4];
    std::int8_t scales[kSuperBlockValues / 16];
    std::uint16_t d;
};

// 8 sub-blocks of 32 values with 6-bit scales ls[j] (offset 32): the low 4
// bits in nibble j % 2 of scales_l[j / 2], the top 2 in bits 2j, 2j+1 of
// scales_h. Sub-block j's 16 bytes qs[16j..16j+15] hold values 32j + l
// (low nibbles) and 32j + 16 + l (high), and
// value = d * (ls[j] - 32) * kIq4nlValues[code].
struct BlockIQ4_XS {
    std::uint16_t d;
    std::uint16_t scales_h;
    std::uint8_t scales_l[kSuperBlockValues / 64];
    std::uint8_t qs[kSuperBlockValues / 2];
};

// 16 sub-blocks of 16 values; scales[s] holds sub-block s's 4-bit scale
// (low nibble) and 4-bit min (high). 2-bit codes: for half h (0..1, 128
// values, qs + 32h), shift 2k (k = 0..3) and l < 32, value
// 128h + 32k + l is (qs[32h + l] >> 2k) & 3, in sub-block 8h + 2k + l / 16;
// value = d * sc[s] * q - dmin * m[s].
struct BlockQ2_K {
    std::uint8_t scales[kSuperBlockValues / 16];
    std::uint8_t qs[kSuperBlockValues / 4];
    std::uint16_t d;
    std::uint16_t dmin;
};

// 16 sub-blocks of 16 values with 6-bit scales (offset 32) packed into 12
// bytes (see unpack_q3k_scales in the .cpp); 3-bit codes: the low 2 bits as
// Q2_K's qs, the third bit of value 128h + 32k + l is bit 4h + k of
// hmask[l], and value = d * (sc[s] - 32) * (low2 - (bit ? 0 : 4)).
struct BlockQ3_K {
    std::uint8_t hmask[kSuperBlockValues / 8];
    std::uint8_t qs[kSuperBlockValues / 4];
    std::uint8_t scales[kKScaleBytes];
    std::uint16_t d;
};

static_assert(sizeof(BlockQ8_0) == 34);
static_assert(sizeof(BlockQ4_1) == 20);
static_assert(sizeof(BlockQ5_1) == 24);
static_assert(sizeof(BlockIQ4_NL) == 18);
static_assert(sizeof(BlockMXFP4) == 17);
static_assert(sizeof(BlockIQ4_XS) == 136);
static_assert(sizeof(BlockQ2_K) == 84);
static_assert(sizeof(BlockQ3_K) == 110);
static_assert(sizeof(BlockQ4_0) == 18);
static_assert(sizeof(BlockQ5_0) == 22);
static_assert(sizeof(BlockQ4_K) == 144);
static_assert(sizeof(BlockQ5_K) == 176);
static_assert(sizeof(BlockQ6_K) == 210);

// Each converts n values (a whole number of blocks: the caller checks) from
// src to dst.
void dequantize_row_f16(const void* src, float* dst, std::size_t n);
void dequantize_row_bf16(const void* src, float* dst, std::size_t n);
void dequantize_row_q8_0(const void* src, float* dst, std::size_t n);
void dequantize_row_q4_0(const void* src, float* dst, std::size_t n);
void dequantize_row_q5_0(const void* src, float* dst, std::size_t n);
void dequantize_row_q4_k(const void* src, float* dst, std::size_t n);
void dequantize_row_q5_k(const void* src, float* dst, std::size_t n);
void dequantize_row_q6_k(const void* src, float* dst, std::size_t n);
void dequantize_row_q4_1(const void* src, float* dst, std::size_t n);
void dequantize_row_q5_1(const void* src, float* dst, std::size_t n);
void dequantize_row_iq4_nl(const void* src, float* dst, std::size_t n);
void dequantize_row_mxfp4(const void* src, float* dst, std::size_t n);
void dequantize_row_iq4_xs(const void* src, float* dst, std::size_t n);
void dequantize_row_q2_k(const void* src, float* dst, std::size_t n);
void dequantize_row_q3_k(const void* src, float* dst, std::size_t n);

// Sub-block scales, unpacked from their block (exact small integers):
// IQ4_XS's 8 ls[j] - 32 and Q3_K's 16 sc[s] - 32, both in -32..31.
void unpack_iq4xs_scales(const BlockIQ4_XS& block, int* scales);
void unpack_q3k_scales(const std::uint8_t* packed, int* scales);

// An MXFP4 block's scale e as the float 2^(e - 128), exact for every e
// (e < 2 are the subnormals 2^-128 and 2^-127): ggml's
// GGML_E8M0_TO_FP32_HALF. Internal linkage, as float16.h says why: the
// SIMD files compile it too.
namespace {
inline float e8m0_half_to_f32(std::uint8_t e) {
    return std::bit_cast<float>(e < 2 ? std::uint32_t{0x00200000} << e : (e - 1u) << 23);
}
} // namespace

} // namespace kvscope::kernels::cpu
