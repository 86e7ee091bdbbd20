// Internal to kernels/cuda: how one KV value of each storage format is
// encoded and decoded on the device. Byte for byte the CPU's encodings
// (kernels/cpu/kv_codes.h and kv_write.cpp), so that a pool written on one
// side reads the same on the other:
//   f16, bf16  round to nearest even (bf16 NaN quieted, sign kept)
//   fp8-e4m3   x / head scale, round to nearest even, saturating at +-448
//   int8       code = rint(x / scale), scale = f16(max|x| / 127)
//   int4       code = rint((x - zero) / scale) in [0, 15] per group of 32,
//              scale = f16((max - min) / 15), zero = f16(min)
//   KIVI       values like int4 with 15 (int4-kivi) or 3 (int2-kivi)
//              levels; keys the same way per channel over a block's slots,
//              the block's head_dim scales then head_dim zeros per head
// Float division is IEEE-exact in CUDA unless -prec-div=false / fast math,
// which kvscope never passes, so codes match the CPU's exactly.
#pragma once

#include <cuda_fp16.h>

#include <cstdint>

#include "kernels/cpu/paged_kv.h"

namespace kvscope::kernels::cuda::detail {

// Values per int4/KIVI-value group along head_dim: kernels/cpu/kv_codes.h's
// kKvGroup (KvLayout's group_size), restated because that header needs
// C++20 and nvcc compiles these files as C++17; the gpu tests compare the
// two writers byte for byte, so the two cannot drift apart unnoticed.
constexpr unsigned kGroup = 32;

// How one row decodes. K and V rows of one KvElem may differ: KIVI keys
// are quantized per channel (Int4Channels, Int2Channels), its values per
// token in groups of 32 (Int4, Int2).
enum class Code : std::uint8_t { F32, F16, BF16, Fp8, Int8, Int4, Int2, Int4Channels, Int2Channels };

__host__ __device__ constexpr bool per_channel(Code c) { return c == Code::Int4Channels || c == Code::Int2Channels; }

// Bytes of 8 consecutive values of a row: what one lane reads at a time.
__host__ __device__ constexpr unsigned chunk_bytes(Code c) {
    switch (c) {
    case Code::F32: return 32;
    case Code::F16:
    case Code::BF16: return 16;
    case Code::Fp8:
    case Code::Int8: return 8;
    case Code::Int4:
    case Code::Int4Channels: return 4;
    case Code::Int2:
    case Code::Int2Channels: return 2;
    }
    return 0;
}

__device__ __forceinline__ float f16_bits_to_float(unsigned bits) {
    return __half2float(__ushort_as_half(static_cast<unsigned short>(bits)));
}

__device__ __forceinline__ unsigned float_to_f16_bits(float x) { return __half_as_ushort(__float2half_rn(x)); }

// The f16 value the reader will see for a scale or zero point.
__device__ __forceinline__ float round_to_f16(float x) { return __half2float(__float2half_rn(x)); }

__device__ __forceinline__ unsigned float_to_bf16_bits(float x) {
    const unsigned bits = __float_as_uint(x);
    if (isnan(x))
        return (bits >> 16) | 0x40u;
    return (bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16;
}

// e4m3: the 7 magnitude bits placed in a float's exponent and mantissa give
// 2^(e-127)(1 + m/8), times 2^120 that is e4m3's 2^(e-7)(1 + m/8); the
// subnormals come out right the same way. Exact.
__device__ __forceinline__ float e4m3_to_float(unsigned code) {
    const float magnitude = __uint_as_float((code & 0x7Fu) << 20) * 0x1p120f;
    return (code & 0x80u) ? -magnitude : magnitude;
}

__device__ __forceinline__ unsigned float_to_e4m3(float x) {
    const unsigned sign = signbit(x) ? 0x80u : 0u;
    const float a = fabsf(x);
    if (isnan(a))
        return 0x7Fu;
    if (a >= 448.0f)
        return sign | 0x7Eu;
    if (a < 0x1p-6f) // subnormal: multiples of 2^-9
        return sign | static_cast<unsigned>(rintf(a * 0x1p9f));
    const unsigned bits = __float_as_uint(a);
    const unsigned rounded = bits + 0x7FFFFu + ((bits >> 20) & 1u); // 3 mantissa bits, ties to even
    return sign | ((rounded >> 20) - (120u << 3));
}

// The scale (and zero point) that applies to one chunk of 8 values.
struct ChunkScale {
    float scale = 1.0f;
    float zero = 0.0f;
};

// 8 raw values of a row; only the first chunk_bytes(C) / 4 words are used.
struct RawChunk {
    unsigned w[8];
};

// Loads chunk `chunk` of a row. `aligned`: the launcher checked that every
// row starts on a multiple of chunk_bytes (16 at most), so one or two
// vector loads do it; otherwise byte loads.
template <Code C>
__device__ __forceinline__ void load_chunk(const unsigned char* row, unsigned chunk, bool aligned, RawChunk& raw) {
    constexpr unsigned bytes = chunk_bytes(C);
    const unsigned char* p = row + chunk * bytes;
    if (aligned) {
        if constexpr (bytes >= 16) {
            for (unsigned i = 0; i < bytes / 16; ++i) {
                const uint4 v = __ldg(reinterpret_cast<const uint4*>(p) + i);
                raw.w[4 * i] = v.x, raw.w[4 * i + 1] = v.y, raw.w[4 * i + 2] = v.z, raw.w[4 * i + 3] = v.w;
            }
        } else if constexpr (bytes == 8) {
            const uint2 v = __ldg(reinterpret_cast<const uint2*>(p));
            raw.w[0] = v.x, raw.w[1] = v.y;
        } else if constexpr (bytes == 4) {
            raw.w[0] = __ldg(reinterpret_cast<const unsigned*>(p));
        } else {
            raw.w[0] = __ldg(reinterpret_cast<const unsigned short*>(p));
        }
        return;
    }
    if constexpr (bytes == 2) {
        raw.w[0] = unsigned{__ldg(p)} | unsigned{__ldg(p + 1)} << 8;
    } else {
#pragma unroll
        for (unsigned i = 0; i < bytes / 4; ++i)
            raw.w[i] = unsigned{__ldg(p + 4 * i)} | unsigned{__ldg(p + 4 * i + 1)} << 8 |
                       unsigned{__ldg(p + 4 * i + 2)} << 16 | unsigned{__ldg(p + 4 * i + 3)} << 24;
    }
}

__device__ __forceinline__ unsigned load_u16(const unsigned char* p) {
    return unsigned{__ldg(p)} | unsigned{__ldg(p + 1)} << 8;
}

// The scales of chunk `chunk` of a row: `scales` is the row's scale bytes
// (int8: one f16; int4: (f16 scale, f16 zero) per group), `fixed` the
// head's fp8 scale.
template <Code C>
__device__ __forceinline__ ChunkScale load_scale(const unsigned char* scales, const float* fixed, unsigned chunk) {
    ChunkScale s;
    if constexpr (C == Code::Fp8) {
        s.scale = __ldg(fixed);
    } else if constexpr (C == Code::Int8) {
        s.scale = f16_bits_to_float(load_u16(scales));
    } else if constexpr (C == Code::Int4 || C == Code::Int2) {
        const unsigned char* pair = scales + 4 * (chunk * 8 / kGroup);
        s.scale = f16_bits_to_float(load_u16(pair));
        s.zero = f16_bits_to_float(load_u16(pair + 2));
    }
    return s;
}

// Small unsigned integers to float without the integer-to-float
// conversion instruction (a quarter of the FMA rate): OR-ing u < 2^23 into
// the mantissa of 2^23 gives the float 2^23 + u exactly, and subtracting
// 2^23 leaves u exactly. An int8 code c is stored as the byte c + 128 after
// flipping its sign bit, so the same trick with 2^23 + 128 gives c.
__device__ __forceinline__ float int8_byte_to_float(unsigned word, unsigned byte) {
    const unsigned biased = __byte_perm(word ^ 0x80808080u, 0x4B000000u, 0x7540u | byte); // 0x4B0000bb
    return __uint_as_float(biased) - 8388736.0f;                                           // - (2^23 + 128)
}

__device__ __forceinline__ float nibble_to_float(unsigned word, unsigned nibble) {
    return __uint_as_float(0x4B000000u | ((word >> (4 * nibble)) & 0xFu)) - 8388608.0f; // - 2^23
}

__device__ __forceinline__ float crumb_to_float(unsigned word, unsigned crumb) {
    return __uint_as_float(0x4B000000u | ((word >> (2 * crumb)) & 0x3u)) - 8388608.0f;
}

// value = code * scale (+ zero), as kv_codes.h decodes it (the code exactly,
// then one multiply and one add, so the same float as the CPU's).
template <Code C>
__device__ __forceinline__ void decode_chunk(const RawChunk& raw, ChunkScale s, float (&x)[8]) {
#pragma unroll
    for (int i = 0; i < 8; ++i) {
        if constexpr (C == Code::F32) {
            x[i] = __uint_as_float(raw.w[i]);
        } else if constexpr (C == Code::F16) {
            x[i] = f16_bits_to_float(raw.w[i / 2] >> (16 * (i % 2)));
        } else if constexpr (C == Code::BF16) {
            x[i] = __uint_as_float((raw.w[i / 2] >> (16 * (i % 2))) << 16);
        } else if constexpr (C == Code::Fp8) {
            x[i] = e4m3_to_float((raw.w[i / 4] >> (8 * (i % 4))) & 0xFFu) * s.scale;
        } else if constexpr (C == Code::Int8) {
            x[i] = int8_byte_to_float(raw.w[i / 4], i % 4) * s.scale;
        } else if constexpr (C == Code::Int4) {
            x[i] = nibble_to_float(raw.w[0], i) * s.scale + s.zero;
        } else {
            static_assert(C == Code::Int2);
            x[i] = crumb_to_float(raw.w[0], i) * s.scale + s.zero;
        }
    }
}

// A KIVI key chunk: value i is code * scale[c] + zero[c] for its channel
// c = 8 chunk + i, the scales being the block's (`channel_scales`: head_dim
// f16 scales, then head_dim f16 zeros).
template <Code C>
__device__ __forceinline__ void decode_channel_chunk(const RawChunk& raw, const unsigned char* channel_scales,
                                                     unsigned chunk, unsigned head_dim, float (&x)[8]) {
    static_assert(per_channel(C));
    const unsigned char* scale = channel_scales + 2 * (8 * chunk);
    const unsigned char* zero = scale + 2 * head_dim;
#pragma unroll
    for (int i = 0; i < 8; ++i) {
        const float code = C == Code::Int4Channels ? nibble_to_float(raw.w[0], i) : crumb_to_float(raw.w[0], i);
        x[i] = code * f16_bits_to_float(load_u16(scale + 2 * i)) + f16_bits_to_float(load_u16(zero + 2 * i));
    }
}

// How K rows and V rows of a KV storage format decode.
struct RowCodes {
    Code k, v;
};
RowCodes row_codes(cpu::KvElem elem);

} // namespace kvscope::kernels::cuda::detail
