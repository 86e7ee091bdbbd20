// Portable row dot products: the reference path, and the one used on CPUs
// without AVX2. Quantized weights are read block by block and multiplied
// with the 8-bit activations in integers, exactly as the AVX2 path does,
// so both paths agree to float rounding.
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "kernels/cpu/activation_quant.h"
#include "kernels/cpu/float16.h"
#include "kernels/cpu/k_quant_scales.h"
#include "kernels/cpu/quant_blocks.h"
#include "kernels/cpu/row_dot.h"

namespace kvscope::kernels::cpu::detail {
namespace {

template <typename Block>
Block load_block(const std::byte* row, std::size_t index) {
    Block block;
    std::memcpy(&block, row + index * sizeof(Block), sizeof(Block));
    return block;
}

std::uint16_t load_u16(const std::byte* row, std::size_t index) {
    std::uint16_t bits;
    std::memcpy(&bits, row + 2 * index, 2);
    return bits;
}

// Four partial sums let the compiler overlap the multiply-adds.
template <typename Load>
float dot_floats(Load load, const float* x, std::size_t n) {
    float partial[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    std::size_t i = 0;
    for (; i + 4 <= n; i += 4)
        for (std::size_t k = 0; k < 4; ++k)
            partial[k] += load(i + k) * x[i + k];
    for (; i < n; ++i)
        partial[0] += load(i) * x[i];
    return (partial[0] + partial[1]) + (partial[2] + partial[3]);
}

float dot_f32(const std::byte* w, const void* x, std::size_t cols) {
    const auto load = [w](std::size_t i) {
        float v;
        std::memcpy(&v, w + 4 * i, 4);
        return v;
    };
    return dot_floats(load, static_cast<const float*>(x), cols);
}

float dot_f16(const std::byte* w, const void* x, std::size_t cols) {
    const auto load = [w](std::size_t i) { return f16_to_f32(load_u16(w, i)); };
    return dot_floats(load, static_cast<const float*>(x), cols);
}

float dot_bf16(const std::byte* w, const void* x, std::size_t cols) {
    const auto load = [w](std::size_t i) { return bf16_to_f32(load_u16(w, i)); };
    return dot_floats(load, static_cast<const float*>(x), cols);
}

// A block of 32's integers, as `decode` gives them, times the activation
// block's.
template <typename Block, typename Decode>
int block_isum(const Block& block, const std::int8_t* act, Decode decode) {
    int q[kActBlockValues];
    decode(block, q);
    int isum = 0;
    for (std::size_t i = 0; i < kActBlockValues; ++i)
        isum += q[i] * act[i];
    return isum;
}

// A block of 32's scale: its f16 d, or MXFP4's E8M0 e.
template <typename Block>
float block_scale(const Block& block) {
    if constexpr (std::is_same_v<Block, BlockMXFP4>)
        return e8m0_half_to_f32(block.e);
    else
        return f16_to_f32(block.d);
}

// Blocks of 32: the weight's 32 integers (already offset) times the
// activation's, scaled by both block scales.
template <typename Block, typename Decode>
float dot_blocks32(const std::byte* w, const void* xv, std::size_t cols, Decode decode) {
    const auto* x = static_cast<const ActBlock32*>(xv);
    float sum = 0.0f;
    for (std::size_t b = 0; b < cols / kActBlockValues; ++b) {
        const auto block = load_block<Block>(w, b);
        sum += block_scale(block) * x[b].d * static_cast<float>(block_isum(block, x[b].qs, decode));
    }
    return sum;
}

float dot_q8_0(const std::byte* w, const void* x, std::size_t cols) {
    return dot_blocks32<BlockQ8_0>(w, x, cols, [](const BlockQ8_0& block, int* q) {
        for (std::size_t i = 0; i < kActBlockValues; ++i)
            q[i] = block.qs[i];
    });
}

float dot_q4_0(const std::byte* w, const void* x, std::size_t cols) {
    return dot_blocks32<BlockQ4_0>(w, x, cols, [](const BlockQ4_0& block, int* q) {
        for (std::size_t i = 0; i < kActBlockValues / 2; ++i) {
            q[i] = (block.qs[i] & 0x0F) - 8;
            q[i + 16] = (block.qs[i] >> 4) - 8;
        }
    });
}

float dot_q5_0(const std::byte* w, const void* x, std::size_t cols) {
    return dot_blocks32<BlockQ5_0>(w, x, cols, [](const BlockQ5_0& block, int* q) {
        std::uint32_t qh;
        std::memcpy(&qh, block.qh, 4);
        for (std::size_t i = 0; i < kActBlockValues / 2; ++i) {
            q[i] = ((block.qs[i] & 0x0F) | static_cast<int>(((qh >> i) & 1u) << 4)) - 16;
            q[i + 16] = ((block.qs[i] >> 4) | static_cast<int>(((qh >> (i + 16)) & 1u) << 4)) - 16;
        }
    });
}

// Sum of activation integers over 32-value sub-block j (two bsums of 16).
int act_sum32(const ActBlock256& a, int j) { return a.bsums[2 * j] + a.bsums[2 * j + 1]; }

// Q4_K and Q5_K: value = d*sc[j]*q - dmin*m[j] over sub-block j, so
// dot = d * sum_j sc[j] * (q . a)_j - dmin * sum_j m[j] * sum(a)_j.
template <typename Block, typename Quant>
float dot_k_scaled(const std::byte* w, const void* xv, std::size_t cols, Quant quant) {
    const auto* x = static_cast<const ActBlock256*>(xv);
    float sum = 0.0f;
    for (std::size_t b = 0; b < cols / kActSuperValues; ++b) {
        const auto block = load_block<Block>(w, b);
        const ActBlock256& a = x[b];
        const KScales s = unpack_k_scales(block.scales);
        int scaled = 0;
        int mins = 0;
        for (int j = 0; j < 8; ++j) {
            int qa = 0;
            for (int l = 0; l < 32; ++l)
                qa += quant(block, 32 * j + l) * a.qs[32 * j + l];
            scaled += s.scale[j] * qa;
            mins += s.min[j] * act_sum32(a, j);
        }
        sum += f16_to_f32(block.d) * a.d * static_cast<float>(scaled) -
               f16_to_f32(block.dmin) * a.d * static_cast<float>(mins);
    }
    return sum;
}

// Value i of a Q4_K/Q5_K block lives in chunk i / 64; the first 32 values
// of a chunk use low nibbles, the next 32 the high nibbles of the same bytes.
int k_nibble(const std::uint8_t* qs, int i) {
    const int chunk = i / 64;
    const int l = i % 32;
    const int byte = qs[32 * chunk + l];
    return (i % 64) < 32 ? (byte & 0x0F) : (byte >> 4);
}

float dot_q4_k(const std::byte* w, const void* x, std::size_t cols) {
    return dot_k_scaled<BlockQ4_K>(w, x, cols,
                                   [](const BlockQ4_K& b, int i) { return k_nibble(b.qs, i); });
}

float dot_q5_k(const std::byte* w, const void* x, std::size_t cols) {
    return dot_k_scaled<BlockQ5_K>(w, x, cols, [](const BlockQ5_K& b, int i) {
        const int bit = i / 32; // 2 * chunk for the low half, 2 * chunk + 1 for the high
        return k_nibble(b.qs, i) | (((b.qh[i % 32] >> bit) & 1) << 4);
    });
}

// Q6_K: value = d * scales[i/16] * (q - 32), so
// dot = d * (sum_s scales[s] * (q . a)_s - 32 * sum_s scales[s] * sum(a)_s).
float dot_q6_k(const std::byte* w, const void* xv, std::size_t cols) {
    const auto* x = static_cast<const ActBlock256*>(xv);
    float sum = 0.0f;
    for (std::size_t b = 0; b < cols / kActSuperValues; ++b) {
        const auto block = load_block<BlockQ6_K>(w, b);
        const ActBlock256& a = x[b];
        int q[kActSuperValues];
        for (int h = 0; h < 2; ++h) {
            const std::uint8_t* ql = block.ql + 64 * h;
            const std::uint8_t* qh = block.qh + 32 * h;
            int* out = q + 128 * h;
            for (int l = 0; l < 32; ++l) {
                out[l] = (ql[l] & 0x0F) | (((qh[l] >> 0) & 3) << 4);
                out[l + 32] = (ql[l + 32] & 0x0F) | (((qh[l] >> 2) & 3) << 4);
                out[l + 64] = (ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4);
                out[l + 96] = (ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4);
            }
        }
        int total = 0;
        for (int s = 0; s < 16; ++s) {
            int qa = 0;
            for (int l = 0; l < 16; ++l)
                qa += q[16 * s + l] * a.qs[16 * s + l];
            total += block.scales[s] * (qa - 32 * a.bsums[s]);
        }
        sum += f16_to_f32(block.d) * a.d * static_cast<float>(total);
    }
    return sum;
}

// Q4_1 and Q5_1: value = d * q + m, so per block
// dot = d * a.d * (q . a) + m * a.s (a.s ~ a.d * sum(a), as ggml rounds it).
template <typename Block, typename Decode>
float dot_blocks32_min(const std::byte* w, const void* xv, std::size_t cols, Decode decode) {
    const auto* x = static_cast<const ActBlock32Sum*>(xv);
    float sum = 0.0f;
    for (std::size_t b = 0; b < cols / kActBlockValues; ++b) {
        const auto block = load_block<Block>(w, b);
        sum += f16_to_f32(block.d) * x[b].d * static_cast<float>(block_isum(block, x[b].qs, decode)) +
               f16_to_f32(block.m) * x[b].s;
    }
    return sum;
}

float dot_q4_1(const std::byte* w, const void* x, std::size_t cols) {
    return dot_blocks32_min<BlockQ4_1>(w, x, cols, [](const BlockQ4_1& block, int* q) {
        for (std::size_t i = 0; i < kActBlockValues / 2; ++i) {
            q[i] = block.qs[i] & 0x0F;
            q[i + 16] = block.qs[i] >> 4;
        }
    });
}

float dot_q5_1(const std::byte* w, const void* x, std::size_t cols) {
    return dot_blocks32_min<BlockQ5_1>(w, x, cols, [](const BlockQ5_1& block, int* q) {
        std::uint32_t qh;
        std::memcpy(&qh, block.qh, 4);
        for (std::size_t i = 0; i < kActBlockValues / 2; ++i) {
            q[i] = (block.qs[i] & 0x0F) | static_cast<int>(((qh >> i) & 1u) << 4);
            q[i + 16] = (block.qs[i] >> 4) | static_cast<int>(((qh >> (i + 16)) & 1u) << 4);
        }
    });
}

float dot_iq4_nl(const std::byte* w, const void* x, std::size_t cols) {
    return dot_blocks32<BlockIQ4_NL>(w, x, cols, [](const BlockIQ4_NL& block, int* q) {
        for (std::size_t i = 0; i < kActBlockValues / 2; ++i) {
            q[i] = kIq4nlValues[block.qs[i] & 0x0F];
            q[i + 16] = kIq4nlValues[block.qs[i] >> 4];
        }
    });
}

// llama.cpp's ggml_vec_dot_mxfp4_q8_0 the same way: per block
// (e8m0 x activation d) x the integer sum.
float dot_mxfp4(const std::byte* w, const void* x, std::size_t cols) {
    return dot_blocks32<BlockMXFP4>(w, x, cols, [](const BlockMXFP4& block, int* q) {
        for (std::size_t i = 0; i < kActBlockValues / 2; ++i) {
            q[i] = kMxfp4Values[block.qs[i] & 0x0F];
            q[i + 16] = kMxfp4Values[block.qs[i] >> 4];
        }
    });
}

// The integer dot product of sub-block s (`len` values) of codes q with
// the activation codes.
int sub_dot(const int* q, const ActBlock256& a, int s, int len) {
    int sum = 0;
    for (int l = 0; l < len; ++l)
        sum += q[len * s + l] * a.qs[len * s + l];
    return sum;
}

// IQ4_XS: value = d * sc[j] * kIq4nlValues[code] over sub-block j of 32.
float dot_iq4_xs(const std::byte* w, const void* xv, std::size_t cols) {
    const auto* x = static_cast<const ActBlock256*>(xv);
    float sum = 0.0f;
    for (std::size_t b = 0; b < cols / kActSuperValues; ++b) {
        const auto block = load_block<BlockIQ4_XS>(w, b);
        int scales[8], q[kActSuperValues];
        unpack_iq4xs_scales(block, scales);
        for (int j = 0; j < 8; ++j)
            for (int l = 0; l < 16; ++l) {
                q[32 * j + l] = kIq4nlValues[block.qs[16 * j + l] & 0x0F];
                q[32 * j + 16 + l] = kIq4nlValues[block.qs[16 * j + l] >> 4];
            }
        int total = 0;
        for (int j = 0; j < 8; ++j)
            total += scales[j] * sub_dot(q, x[b], j, 32);
        sum += f16_to_f32(block.d) * x[b].d * static_cast<float>(total);
    }
    return sum;
}

// Q2_K and Q3_K keep value 128h + 32k + l (l < 32) in bits 2k of byte
// 32h + l of qs (quant_blocks.h).
int k_low2(const std::uint8_t* qs, int i) { return (qs[32 * (i / 128) + i % 32] >> (2 * (i % 128 / 32))) & 3; }

// Q2_K: value = d * sc[s] * q - dmin * m[s] over sub-block s of 16, so
// dot = d * sum_s sc[s] (q . a)_s - dmin * sum_s m[s] bsums[s].
float dot_q2_k(const std::byte* w, const void* xv, std::size_t cols) {
    const auto* x = static_cast<const ActBlock256*>(xv);
    float sum = 0.0f;
    for (std::size_t b = 0; b < cols / kActSuperValues; ++b) {
        const auto block = load_block<BlockQ2_K>(w, b);
        const ActBlock256& a = x[b];
        int q[kActSuperValues];
        for (int i = 0; i < 256; ++i)
            q[i] = k_low2(block.qs, i);
        int scaled = 0, mins = 0;
        for (int s = 0; s < 16; ++s) {
            scaled += (block.scales[s] & 0x0F) * sub_dot(q, a, s, 16);
            mins += (block.scales[s] >> 4) * a.bsums[s];
        }
        sum += f16_to_f32(block.d) * a.d * static_cast<float>(scaled) -
               f16_to_f32(block.dmin) * a.d * static_cast<float>(mins);
    }
    return sum;
}

// Q3_K: value = d * sc[s] * q with q = low2 - 4 where the high bit is clear.
float dot_q3_k(const std::byte* w, const void* xv, std::size_t cols) {
    const auto* x = static_cast<const ActBlock256*>(xv);
    float sum = 0.0f;
    for (std::size_t b = 0; b < cols / kActSuperValues; ++b) {
        const auto block = load_block<BlockQ3_K>(w, b);
        int scales[16], q[kActSuperValues];
        unpack_q3k_scales(block.scales, scales);
        for (int i = 0; i < 256; ++i) {
            const int high = (block.hmask[i % 32] >> (i / 32)) & 1;
            q[i] = k_low2(block.qs, i) - (high ? 0 : 4);
        }
        int total = 0;
        for (int s = 0; s < 16; ++s)
            total += scales[s] * sub_dot(q, x[b], s, 16);
        sum += f16_to_f32(block.d) * x[b].d * static_cast<float>(total);
    }
    return sum;
}

} // namespace

RowDot scalar_row_dot(WeightType type) {
    switch (type) {
    case WeightType::F32: return dot_f32;
    case WeightType::F16: return dot_f16;
    case WeightType::BF16: return dot_bf16;
    case WeightType::Q8_0: return dot_q8_0;
    case WeightType::Q4_0: return dot_q4_0;
    case WeightType::Q5_0: return dot_q5_0;
    case WeightType::Q4_K: return dot_q4_k;
    case WeightType::Q5_K: return dot_q5_k;
    case WeightType::Q6_K: return dot_q6_k;
    case WeightType::Q4_1: return dot_q4_1;
    case WeightType::Q5_1: return dot_q5_1;
    case WeightType::IQ4_NL: return dot_iq4_nl;
    case WeightType::MXFP4: return dot_mxfp4;
    case WeightType::IQ4_XS: return dot_iq4_xs;
    case WeightType::Q2_K: return dot_q2_k;
    case WeightType::Q3_K: return dot_q3_k;
    }
    return nullptr;
}

} // namespace kvscope::kernels::cpu::detail
