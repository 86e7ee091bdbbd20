#include "kernels/cpu/quant_blocks.h"

#include <cstring>

#include "kernels/cpu/float16.h"

namespace kvscope::kernels::cpu {
namespace {

template <typename Block>
Block load_block(const void* src, std::size_t index) {
    Block block;
    std::memcpy(&block, static_cast<const unsigned char*>(src) + index * sizeof(Block),
                sizeof(Block));
    return block;
}

std::uint16_t load_u16(const void* src, std::size_t index) {
    std::uint16_t bits;
    std::memcpy(&bits, static_cast<const unsigned char*>(src) + 2 * index, 2);
    return bits;
}

// Sub-block j (0..7) of a Q4_K/Q5_K block: scale and min are 6 bits each.
// Sub-blocks 0-3 keep them in the low 6 bits of bytes j and j+4; sub-blocks
// 4-7 keep their low 4 bits in the nibbles of byte j+4 and their top 2 bits
// in the spare top bits of bytes j-4 (scale) and j (min).
struct ScaleMin {
    float scale;
    float min;
};

ScaleMin unpack_k_scale_min(const std::uint8_t* q, int j) {
    if (j < 4)
        return {static_cast<float>(q[j] & 63), static_cast<float>(q[j + 4] & 63)};
    const int scale = (q[j + 4] & 0x0F) | ((q[j - 4] >> 6) << 4);
    const int min = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
    return {static_cast<float>(scale), static_cast<float>(min)};
}

} // namespace

void dequantize_row_f16(const void* src, float* dst, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i)
        dst[i] = f16_to_f32(load_u16(src, i));
}

void dequantize_row_bf16(const void* src, float* dst, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i)
        dst[i] = bf16_to_f32(load_u16(src, i));
}

void dequantize_row_q8_0(const void* src, float* dst, std::size_t n) {
    for (std::size_t b = 0; b < n / kQuantBlockValues; ++b, dst += kQuantBlockValues) {
        const auto block = load_block<BlockQ8_0>(src, b);
        const float d = f16_to_f32(block.d);
        for (std::size_t i = 0; i < kQuantBlockValues; ++i)
            dst[i] = static_cast<float>(block.qs[i]) * d;
    }
}

void dequantize_row_q4_0(const void* src, float* dst, std::size_t n) {
    constexpr std::size_t half = kQuantBlockValues / 2;
    for (std::size_t b = 0; b < n / kQuantBlockValues; ++b, dst += kQuantBlockValues) {
        const auto block = load_block<BlockQ4_0>(src, b);
        const float d = f16_to_f32(block.d);
        for (std::size_t i = 0; i < half; ++i) {
            dst[i] = static_cast<float>((block.qs[i] & 0x0F) - 8) * d;
            dst[i + half] = static_cast<float>((block.qs[i] >> 4) - 8) * d;
        }
    }
}

void dequantize_row_q5_0(const void* src, float* dst, std::size_t n) {
    constexpr std::size_t half = kQuantBlockValues / 2;
    for (std::size_t b = 0; b < n / kQuantBlockValues; ++b, dst += kQuantBlockValues) {
        const auto block = load_block<BlockQ5_0>(src, b);
        const float d = f16_to_f32(block.d);
        std::uint32_t qh;
        std::memcpy(&qh, block.qh, sizeof qh);
        for (std::size_t i = 0; i < half; ++i) {
            const int high_lo = static_cast<int>((qh >> i) & 1u) << 4;
            const int high_hi = static_cast<int>((qh >> (i + half)) & 1u) << 4;
            dst[i] = static_cast<float>(((block.qs[i] & 0x0F) | high_lo) - 16) * d;
            dst[i + half] = static_cast<float>(((block.qs[i] >> 4) | high_hi) - 16) * d;
        }
    }
}

void dequantize_row_q4_k(const void* src, float* dst, std::size_t n) {
    for (std::size_t b = 0; b < n / kSuperBlockValues; ++b) {
        const auto block = load_block<BlockQ4_K>(src, b);
        const float d = f16_to_f32(block.d);
        const float dmin = f16_to_f32(block.dmin);
        for (int chunk = 0; chunk < 4; ++chunk) {
            const std::uint8_t* q = block.qs + 32 * chunk;
            const ScaleMin lo = unpack_k_scale_min(block.scales, 2 * chunk);
            const ScaleMin hi = unpack_k_scale_min(block.scales, 2 * chunk + 1);
            for (int l = 0; l < 32; ++l)
                *dst++ = d * lo.scale * static_cast<float>(q[l] & 0x0F) - dmin * lo.min;
            for (int l = 0; l < 32; ++l)
                *dst++ = d * hi.scale * static_cast<float>(q[l] >> 4) - dmin * hi.min;
        }
    }
}

void dequantize_row_q5_k(const void* src, float* dst, std::size_t n) {
    for (std::size_t b = 0; b < n / kSuperBlockValues; ++b) {
        const auto block = load_block<BlockQ5_K>(src, b);
        const float d = f16_to_f32(block.d);
        const float dmin = f16_to_f32(block.dmin);
        for (int chunk = 0; chunk < 4; ++chunk) {
            const std::uint8_t* q = block.qs + 32 * chunk;
            const int lo_bit = 2 * chunk;
            const int hi_bit = 2 * chunk + 1;
            const ScaleMin lo = unpack_k_scale_min(block.scales, lo_bit);
            const ScaleMin hi = unpack_k_scale_min(block.scales, hi_bit);
            for (int l = 0; l < 32; ++l) {
                const int value = (q[l] & 0x0F) | (((block.qh[l] >> lo_bit) & 1) << 4);
                *dst++ = d * lo.scale * static_cast<float>(value) - dmin * lo.min;
            }
            for (int l = 0; l < 32; ++l) {
                const int value = (q[l] >> 4) | (((block.qh[l] >> hi_bit) & 1) << 4);
                *dst++ = d * hi.scale * static_cast<float>(value) - dmin * hi.min;
            }
        }
    }
}

void dequantize_row_q6_k(const void* src, float* dst, std::size_t n) {
    for (std::size_t b = 0; b < n / kSuperBlockValues; ++b) {
        const auto block = load_block<BlockQ6_K>(src, b);
        const float d = f16_to_f32(block.d);
        for (int h = 0; h < 2; ++h, dst += 128) {
            const std::uint8_t* ql = block.ql + 64 * h;
            const std::uint8_t* qh = block.qh + 32 * h;
            const std::int8_t* sc = block.scales + 8 * h;
            for (int l = 0; l < 32; ++l) {
                const int s = l / 16; // 16-value sub-block within each 32-value quarter
                const int q1 = ((ql[l] & 0x0F) | (((qh[l] >> 0) & 3) << 4)) - 32;
                const int q2 = ((ql[l + 32] & 0x0F) | (((qh[l] >> 2) & 3) << 4)) - 32;
                const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
                const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
                dst[l] = d * static_cast<float>(sc[s] * q1);
                dst[l + 32] = d * static_cast<float>(sc[s + 2] * q2);
                dst[l + 64] = d * static_cast<float>(sc[s + 4] * q3);
                dst[l + 96] = d * static_cast<float>(sc[s + 6] * q4);
            }
        }
    }
}

void unpack_iq4xs_scales(const BlockIQ4_XS& block, int* scales) {
    for (int j = 0; j < 8; ++j)
        scales[j] = ((block.scales_l[j / 2] >> (4 * (j % 2))) & 0x0F) + (((block.scales_h >> (2 * j)) & 3) << 4) - 32;
}

// Q3_K's 12 bytes: scale i (0..3) has its low 4 bits in the low nibble of
// byte i, 4 + i in that of byte 4 + i, 8 + i and 12 + i in the high nibbles
// of bytes i and 4 + i; bits 4-5 of scale 4k + i are bits 2k, 2k + 1 of
// byte 8 + i.
void unpack_q3k_scales(const std::uint8_t* packed, int* scales) {
    for (int k = 0; k < 4; ++k)
        for (int i = 0; i < 4; ++i) {
            const int low = (packed[4 * (k % 2) + i] >> (4 * (k / 2))) & 0x0F;
            const int high = (packed[8 + i] >> (2 * k)) & 3;
            scales[4 * k + i] = (low | (high << 4)) - 32;
        }
}

// The products below are exact in float (few significant bits each), so
// these give llama.cpp's bits whatever the order of the multiplications.
void dequantize_row_q4_1(const void* src, float* dst, std::size_t n) {
    constexpr std::size_t half = kQuantBlockValues / 2;
    for (std::size_t b = 0; b < n / kQuantBlockValues; ++b, dst += kQuantBlockValues) {
        const auto block = load_block<BlockQ4_1>(src, b);
        const float d = f16_to_f32(block.d);
        const float m = f16_to_f32(block.m);
        for (std::size_t i = 0; i < half; ++i) {
            dst[i] = static_cast<float>(block.qs[i] & 0x0F) * d + m;
            dst[i + half] = static_cast<float>(block.qs[i] >> 4) * d + m;
        }
    }
}

void dequantize_row_q5_1(const void* src, float* dst, std::size_t n) {
    constexpr std::size_t half = kQuantBlockValues / 2;
    for (std::size_t b = 0; b < n / kQuantBlockValues; ++b, dst += kQuantBlockValues) {
        const auto block = load_block<BlockQ5_1>(src, b);
        const float d = f16_to_f32(block.d);
        const float m = f16_to_f32(block.m);
        std::uint32_t qh;
        std::memcpy(&qh, block.qh, sizeof qh);
        for (std::size_t i = 0; i < half; ++i) {
            const int lo = (block.qs[i] & 0x0F) | static_cast<int>(((qh >> i) & 1u) << 4);
            const int hi = (block.qs[i] >> 4) | static_cast<int>(((qh >> (i + half)) & 1u) << 4);
            dst[i] = static_cast<float>(lo) * d + m;
            dst[i + half] = static_cast<float>(hi) * d + m;
        }
    }
}

void dequantize_row_iq4_nl(const void* src, float* dst, std::size_t n) {
    constexpr std::size_t half = kQuantBlockValues / 2;
    for (std::size_t b = 0; b < n / kQuantBlockValues; ++b, dst += kQuantBlockValues) {
        const auto block = load_block<BlockIQ4_NL>(src, b);
        const float d = f16_to_f32(block.d);
        for (std::size_t i = 0; i < half; ++i) {
            dst[i] = d * static_cast<float>(kIq4nlValues[block.qs[i] & 0x0F]);
            dst[i + half] = d * static_cast<float>(kIq4nlValues[block.qs[i] >> 4]);
        }
    }
}

// Exact products (a small integer times a power of two), as llama.cpp's.
void dequantize_row_mxfp4(const void* src, float* dst, std::size_t n) {
    constexpr std::size_t half = kQuantBlockValues / 2;
    for (std::size_t b = 0; b < n / kQuantBlockValues; ++b, dst += kQuantBlockValues) {
        const auto block = load_block<BlockMXFP4>(src, b);
        const float d = e8m0_half_to_f32(block.e);
        for (std::size_t i = 0; i < half; ++i) {
            dst[i] = static_cast<float>(kMxfp4Values[block.qs[i] & 0x0F]) * d;
            dst[i + half] = static_cast<float>(kMxfp4Values[block.qs[i] >> 4]) * d;
        }
    }
}

void dequantize_row_iq4_xs(const void* src, float* dst, std::size_t n) {
    for (std::size_t b = 0; b < n / kSuperBlockValues; ++b) {
        const auto block = load_block<BlockIQ4_XS>(src, b);
        const float d = f16_to_f32(block.d);
        int scales[8];
        unpack_iq4xs_scales(block, scales);
        for (int j = 0; j < 8; ++j, dst += 32) {
            const float dl = d * static_cast<float>(scales[j]);
            const std::uint8_t* qs = block.qs + 16 * j;
            for (int l = 0; l < 16; ++l) {
                dst[l] = dl * static_cast<float>(kIq4nlValues[qs[l] & 0x0F]);
                dst[l + 16] = dl * static_cast<float>(kIq4nlValues[qs[l] >> 4]);
            }
        }
    }
}

void dequantize_row_q2_k(const void* src, float* dst, std::size_t n) {
    for (std::size_t b = 0; b < n / kSuperBlockValues; ++b) {
        const auto block = load_block<BlockQ2_K>(src, b);
        const float d = f16_to_f32(block.d);
        const float dmin = f16_to_f32(block.dmin);
        for (int h = 0; h < 2; ++h)
            for (int k = 0; k < 4; ++k)
                for (int part = 0; part < 2; ++part, dst += 16) {
                    const std::uint8_t sc = block.scales[8 * h + 2 * k + part];
                    const float dl = d * static_cast<float>(sc & 0x0F);
                    const float ml = dmin * static_cast<float>(sc >> 4);
                    const std::uint8_t* q = block.qs + 32 * h + 16 * part;
                    for (int l = 0; l < 16; ++l)
                        dst[l] = dl * static_cast<float>((q[l] >> (2 * k)) & 3) - ml;
                }
    }
}

void dequantize_row_q3_k(const void* src, float* dst, std::size_t n) {
    for (std::size_t b = 0; b < n / kSuperBlockValues; ++b) {
        const auto block = load_block<BlockQ3_K>(src, b);
        const float d = f16_to_f32(block.d);
        int scales[16];
        unpack_q3k_scales(block.scales, scales);
        for (int h = 0; h < 2; ++h)
            for (int k = 0; k < 4; ++k)
                for (int part = 0; part < 2; ++part, dst += 16) {
                    const float dl = d * static_cast<float>(scales[8 * h + 2 * k + part]);
                    const int l0 = 16 * part;
                    for (int l = l0; l < l0 + 16; ++l) {
                        const int low = (block.qs[32 * h + l] >> (2 * k)) & 3;
                        const int high = (block.hmask[l] >> (4 * h + k)) & 1;
                        dst[l - l0] = dl * static_cast<float>(low - (high ? 0 : 4));
                    }
                }
    }
}

} // namespace kvscope::kernels::cpu
