#include "engine/model/quantize.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include "engine/core/error.h"
#include "kernels/cpu/float16.h"
#include "kernels/cpu/float16_encode.h"
#include "kernels/cpu/quant_blocks.h"

namespace kvscope {
namespace {

namespace cpu = kernels::cpu;
constexpr std::uint64_t kBlock = cpu::kQuantBlockValues;
constexpr std::uint64_t kSuper = cpu::kSuperBlockValues;

constexpr GgmlType kQuantizable[] = {GgmlType::F32,  GgmlType::F16,    GgmlType::Q4_0,   GgmlType::Q4_1,
                                     GgmlType::Q5_0, GgmlType::Q5_1,   GgmlType::Q8_0,   GgmlType::Q2_K,
                                     GgmlType::Q3_K, GgmlType::IQ4_NL, GgmlType::IQ4_XS, GgmlType::BF16,
                                     GgmlType::MXFP4};

// A float as stored in an f16 field, and the value it decodes to.
struct Half {
    std::uint16_t bits;
    float value;
};
Half to_half(float v) {
    const std::uint16_t bits = cpu::f32_to_f16(v);
    return {bits, cpu::f16_to_f32(bits)};
}

int clamp_round(float v, int lo, int hi) { return std::clamp(static_cast<int>(std::lround(v)), lo, hi); }

// The value of largest magnitude (0 for all zeros).
float signed_max(const float* x, std::size_t n) {
    float max = 0;
    for (std::size_t i = 0; i < n; ++i)
        if (std::abs(x[i]) > std::abs(max))
            max = x[i];
    return max;
}

// Candidate scales are tried around the one that maps the extreme value
// to the end of the code range, in steps of a tenth of a code.
constexpr int kSearchSteps = 5;

// Sums of one candidate's fit: x the values, q the codes it chose.
struct Sums {
    double n = 0, x = 0, q = 0, xx = 0, xq = 0, qq = 0;
    void add(double xi, double qi) {
        n += 1;
        x += xi;
        q += qi;
        xx += xi * xi;
        xq += xi * qi;
        qq += qi * qi;
    }
    // Squared error of x ~ s q + m, from the sums alone.
    double error(double s, double m) const {
        return xx - 2 * s * xq - 2 * m * x + s * s * qq + 2 * s * m * q + n * m * m;
    }
};

// x ~ s * q with integer codes q in [qmin, qmax] (qmin < 0 < qmax): the s
// of least squared error among the candidates, each refit by least squares
// to its codes.
float fit_symmetric(const float* x, std::size_t n, int qmin, int qmax) {
    const float max = signed_max(x, n);
    if (max == 0)
        return 0;
    float best = 0;
    double best_error = std::numeric_limits<double>::infinity();
    for (const int target : {qmin, qmax})
        for (int t = -kSearchSteps; t <= kSearchSteps; ++t) {
            const float inverse = (static_cast<float>(target) + 0.1f * static_cast<float>(t)) / max;
            Sums sums;
            for (std::size_t i = 0; i < n; ++i)
                sums.add(x[i], clamp_round(x[i] * inverse, qmin, qmax));
            if (sums.qq == 0)
                continue;
            const double s = sums.xq / sums.qq;
            if (const double error = sums.error(s, 0); error < best_error) {
                best_error = error;
                best = static_cast<float>(s);
            }
        }
    return best;
}

// x ~ scale * q + min with q in [0, qmax]; with `min_at_most_zero` the
// min is kept <= 0 (Q2_K stores it negated, unsigned).
struct Affine {
    float scale;
    float min;
};
Affine fit_affine(const float* x, std::size_t n, int qmax, bool min_at_most_zero) {
    float lo = *std::min_element(x, x + n);
    const float hi = *std::max_element(x, x + n);
    if (min_at_most_zero)
        lo = std::min(lo, 0.0f);
    if (hi == lo)
        return {0, lo};
    Affine best{(hi - lo) / static_cast<float>(qmax), lo};
    double best_error = std::numeric_limits<double>::infinity();
    for (int t = -kSearchSteps; t <= kSearchSteps; ++t) {
        const float inverse = (static_cast<float>(qmax) + 0.1f * static_cast<float>(t)) / (hi - lo);
        Sums sums;
        for (std::size_t i = 0; i < n; ++i)
            sums.add(x[i], clamp_round((x[i] - lo) * inverse, 0, qmax));
        const double det = sums.n * sums.qq - sums.q * sums.q;
        if (det <= 0)
            continue;
        double s = (sums.n * sums.xq - sums.q * sums.x) / det;
        double m = (sums.qq * sums.x - sums.q * sums.xq) / det;
        if (min_at_most_zero && m > 0) {
            m = 0;
            s = sums.xq / sums.qq;
        }
        if (s <= 0)
            continue;
        if (const double error = sums.error(s, m); error < best_error) {
            best_error = error;
            best = {static_cast<float>(s), static_cast<float>(m)};
        }
    }
    return best;
}

// The index of the kIq4nlValues entry nearest v: how many midpoints
// between neighbours lie below it.
int nearest_iq4nl(float v) {
    static constexpr auto kMid = [] {
        std::array<float, 15> mid{};
        for (std::size_t i = 0; i < mid.size(); ++i)
            mid[i] = (cpu::kIq4nlValues[i] + cpu::kIq4nlValues[i + 1]) / 2.0f;
        return mid;
    }();
    int index = 0;
    for (const float m : kMid)
        index += v > m;
    return index;
}

// x ~ s * kIq4nlValues[code]: as fit_symmetric, the extreme value mapped
// near the table's -127.
float fit_iq4nl(const float* x, std::size_t n) {
    const float max = signed_max(x, n);
    if (max == 0)
        return 0;
    float best = 0;
    double best_error = std::numeric_limits<double>::infinity();
    for (int t = -kSearchSteps; t <= kSearchSteps; ++t) {
        const float inverse = (-127.0f + 2.0f * static_cast<float>(t)) / max;
        Sums sums;
        for (std::size_t i = 0; i < n; ++i)
            sums.add(x[i], cpu::kIq4nlValues[nearest_iq4nl(x[i] * inverse)]);
        const double s = sums.xq / sums.qq;
        if (const double error = sums.error(s, 0); error < best_error) {
            best_error = error;
            best = static_cast<float>(s);
        }
    }
    return best;
}

// Codes of n values for scale d (the stored one): nearest table entries.
void iq4nl_codes(const float* x, std::size_t n, float d, int* codes) {
    const float inverse = d != 0 ? 1.0f / d : 0.0f;
    for (std::size_t i = 0; i < n; ++i)
        codes[i] = nearest_iq4nl(x[i] * inverse);
}

// Value i of a 32-value block in the low nibble of byte i % 16 (i < 16) or
// its high nibble.
void pack_nibbles32(const int* q, std::uint8_t* qs) {
    for (std::size_t i = 0; i < kBlock / 2; ++i)
        qs[i] = static_cast<std::uint8_t>(q[i] | (q[i + kBlock / 2] << 4));
}

// Q8_0: d = max|x| / 127, q = round(x / d).
void quantize_q8_0(const float* x, cpu::BlockQ8_0* out, std::uint64_t blocks) {
    for (std::uint64_t b = 0; b < blocks; ++b, x += kBlock) {
        float amax = 0;
        for (std::uint64_t i = 0; i < kBlock; ++i)
            amax = std::max(amax, std::abs(x[i]));
        const float d = amax / 127.0f;
        const float id = d != 0 ? 1.0f / d : 0.0f;
        out[b].d = cpu::f32_to_f16(d);
        for (std::uint64_t i = 0; i < kBlock; ++i)
            out[b].qs[i] = static_cast<std::int8_t>(std::lround(x[i] * id));
    }
}

// Q4_0 / Q5_0 (ggml's reference): d = (the value of largest magnitude) /
// -half, q = x / d + half, clamped to the code range; half = 8 or 16.
template <int Half>
void offset_codes(const float* x, std::uint16_t& d_bits, int* q) {
    const float d = signed_max(x, kBlock) / -static_cast<float>(Half);
    const float id = d != 0 ? 1.0f / d : 0.0f;
    d_bits = cpu::f32_to_f16(d);
    for (std::uint64_t i = 0; i < kBlock; ++i)
        q[i] = static_cast<int>(std::min(2.0f * Half - 1, std::floor(x[i] * id + Half + 0.5f)));
}

void quantize_q4_0(const float* x, cpu::BlockQ4_0* out, std::uint64_t blocks) {
    for (std::uint64_t b = 0; b < blocks; ++b, x += kBlock) {
        int q[kBlock];
        offset_codes<8>(x, out[b].d, q);
        pack_nibbles32(q, out[b].qs);
    }
}

// The fifth bits of 32 codes: bit i of the little-endian u32 is value i's.
void pack_fifth_bits(const int* q, std::uint8_t* qh) {
    std::uint32_t bits = 0;
    for (std::uint64_t i = 0; i < kBlock; ++i)
        bits |= static_cast<std::uint32_t>(q[i] >> 4) << i;
    std::memcpy(qh, &bits, sizeof bits);
}

void quantize_q5_0(const float* x, cpu::BlockQ5_0* out, std::uint64_t blocks) {
    for (std::uint64_t b = 0; b < blocks; ++b, x += kBlock) {
        int q[kBlock];
        offset_codes<16>(x, out[b].d, q);
        pack_fifth_bits(q, out[b].qh);
        for (int& v : q)
            v &= 0x0F;
        pack_nibbles32(q, out[b].qs);
    }
}

// Q4_1 / Q5_1: x ~ d * q + m, codes for the stored (f16) d and m.
template <typename Block, int QMax>
void quantize_affine32(const float* x, Block* out, std::uint64_t blocks) {
    for (std::uint64_t b = 0; b < blocks; ++b, x += kBlock) {
        const Affine fit = fit_affine(x, kBlock, QMax, false);
        const Half d = to_half(fit.scale), m = to_half(fit.min);
        out[b].d = d.bits;
        out[b].m = m.bits;
        int q[kBlock];
        for (std::uint64_t i = 0; i < kBlock; ++i)
            q[i] = d.value != 0 ? clamp_round((x[i] - m.value) / d.value, 0, QMax) : 0;
        if constexpr (QMax == 31) {
            pack_fifth_bits(q, out[b].qh);
            for (int& v : q)
                v &= 0x0F;
        }
        pack_nibbles32(q, out[b].qs);
    }
}

void quantize_iq4_nl(const float* x, cpu::BlockIQ4_NL* out, std::uint64_t blocks) {
    for (std::uint64_t b = 0; b < blocks; ++b, x += kBlock) {
        const Half d = to_half(fit_iq4nl(x, kBlock));
        out[b].d = d.bits;
        int q[kBlock];
        iq4nl_codes(x, kBlock, d.value, q);
        pack_nibbles32(q, out[b].qs);
    }
}

// A super-block's sub-block scales as small integers times one f16 d:
// d maps the scale of largest magnitude to `extreme` (-32 for the signed
// 6-bit scales, 15 for 4-bit ones), each l = round(scale / d) clamped to
// [lo, hi].
template <std::size_t N>
Half quantize_scales(const float (&scales)[N], float extreme, int lo, int hi, int (&l)[N]) {
    const Half d = to_half(signed_max(scales, N) / extreme);
    for (std::size_t j = 0; j < N; ++j)
        l[j] = d.value != 0 ? clamp_round(scales[j] / d.value, lo, hi) : 0;
    return d;
}

void quantize_iq4_xs(const float* x, cpu::BlockIQ4_XS* out, std::uint64_t blocks) {
    for (std::uint64_t b = 0; b < blocks; ++b, x += kSuper) {
        cpu::BlockIQ4_XS& block = out[b];
        std::memset(&block, 0, sizeof block);
        float scales[8];
        for (std::size_t j = 0; j < 8; ++j)
            scales[j] = fit_iq4nl(x + 32 * j, 32);
        int l[8];
        const Half d = quantize_scales(scales, -32.0f, -32, 31, l);
        block.d = d.bits;
        for (std::size_t j = 0; j < 8; ++j) {
            const int ls = l[j] + 32;
            block.scales_l[j / 2] |= static_cast<std::uint8_t>((ls & 0x0F) << (4 * (j % 2)));
            block.scales_h |= static_cast<std::uint16_t>((ls >> 4) << (2 * j));
            int q[32];
            iq4nl_codes(x + 32 * j, 32, d.value * static_cast<float>(l[j]), q);
            pack_nibbles32(q, block.qs + 16 * j);
        }
    }
}

// MXFP4 as ggml's quantize_row_mxfp4_ref, bit for bit: the scale is
// 2^(floor(log2 max|x|) - 3) (E8M0 e = floor(log2 max|x|) + 125, so the
// block's largest magnitude lands among the table's top values 8 and 12,
// or beyond 12 and clamps), each value the table entry nearest x / scale
// (the first of equally near ones), all in float as ggml computes it.
// log2f is the C library's, as ggml's: its rounding decides e where max|x|
// lies just below a power of two. ggml converts floor(...) + 125 to
// uint8_t; below 2^-125 (e < 0) that conversion is undefined in C, and
// this takes the x86 result, the low byte of the int32.
std::uint8_t mxfp4_exponent(float amax) {
    if (!(amax > 0.0f))
        return 0;
    const float e = std::floor(std::log2(amax)) - 2.0f + 127.0f;
    return static_cast<std::uint8_t>(static_cast<std::int32_t>(e));
}

int nearest_mxfp4(float x, float d) {
    int best = 0;
    float best_error = std::abs(static_cast<float>(cpu::kMxfp4Values[0]) * d - x);
    for (int i = 1; i < 16; ++i)
        if (const float error = std::abs(static_cast<float>(cpu::kMxfp4Values[i]) * d - x); error < best_error) {
            best = i;
            best_error = error;
        }
    return best;
}

void quantize_mxfp4(const float* x, cpu::BlockMXFP4* out, std::uint64_t blocks) {
    for (std::uint64_t b = 0; b < blocks; ++b, x += kBlock) {
        float amax = 0;
        for (std::uint64_t i = 0; i < kBlock; ++i)
            amax = std::max(amax, std::abs(x[i]));
        out[b].e = mxfp4_exponent(amax);
        const float d = cpu::e8m0_half_to_f32(out[b].e);
        int q[kBlock];
        for (std::uint64_t i = 0; i < kBlock; ++i)
            q[i] = nearest_mxfp4(x[i], d);
        pack_nibbles32(q, out[b].qs);
    }
}

// Q2_K and Q3_K: the 2-bit part of value 128h + 32k + l goes to bits 2k
// of qs[32h + l] (quant_blocks.h).
void put_low2(std::uint8_t* qs, std::size_t i, int code) {
    qs[32 * (i / 128) + i % 32] |= static_cast<std::uint8_t>((code & 3) << (2 * (i % 128 / 32)));
}

void quantize_q2_k(const float* x, cpu::BlockQ2_K* out, std::uint64_t blocks) {
    for (std::uint64_t b = 0; b < blocks; ++b, x += kSuper) {
        cpu::BlockQ2_K& block = out[b];
        std::memset(&block, 0, sizeof block);
        float scales[16], mins[16];
        for (std::size_t s = 0; s < 16; ++s) {
            const Affine fit = fit_affine(x + 16 * s, 16, 3, true);
            scales[s] = fit.scale;
            mins[s] = -fit.min;
        }
        int sc[16], mn[16];
        const Half d = quantize_scales(scales, 15.0f, 0, 15, sc);
        const Half dmin = quantize_scales(mins, 15.0f, 0, 15, mn);
        block.d = d.bits;
        block.dmin = dmin.bits;
        for (std::size_t s = 0; s < 16; ++s) {
            block.scales[s] = static_cast<std::uint8_t>(sc[s] | (mn[s] << 4));
            const float dl = d.value * static_cast<float>(sc[s]), ml = dmin.value * static_cast<float>(mn[s]);
            for (std::size_t i = 16 * s; i < 16 * s + 16; ++i)
                put_low2(block.qs, i, dl != 0 ? clamp_round((x[i] + ml) / dl, 0, 3) : 0);
        }
    }
}

// The inverse of cpu::unpack_q3k_scales, for stored scales 0..63.
void pack_q3k_scales(const int* stored, std::uint8_t* packed) {
    std::memset(packed, 0, cpu::kKScaleBytes);
    for (int k = 0; k < 4; ++k)
        for (int i = 0; i < 4; ++i) {
            const int v = stored[4 * k + i];
            packed[4 * (k % 2) + i] |= static_cast<std::uint8_t>((v & 0x0F) << (4 * (k / 2)));
            packed[8 + i] |= static_cast<std::uint8_t>((v >> 4) << (2 * k));
        }
}

void quantize_q3_k(const float* x, cpu::BlockQ3_K* out, std::uint64_t blocks) {
    for (std::uint64_t b = 0; b < blocks; ++b, x += kSuper) {
        cpu::BlockQ3_K& block = out[b];
        std::memset(&block, 0, sizeof block);
        float scales[16];
        for (std::size_t s = 0; s < 16; ++s)
            scales[s] = fit_symmetric(x + 16 * s, 16, -4, 3);
        int l[16], stored[16];
        const Half d = quantize_scales(scales, -32.0f, -32, 31, l);
        block.d = d.bits;
        for (std::size_t s = 0; s < 16; ++s) {
            stored[s] = l[s] + 32;
            const float dl = d.value * static_cast<float>(l[s]);
            for (std::size_t i = 16 * s; i < 16 * s + 16; ++i) {
                const int u = (dl != 0 ? clamp_round(x[i] / dl, -4, 3) : 0) + 4; // 0..7
                put_low2(block.qs, i, u);
                block.hmask[i % 32] |= static_cast<std::uint8_t>((u >> 2) << (i / 32));
            }
        }
        pack_q3k_scales(stored, block.scales);
    }
}

template <typename Block>
Block* blocks_at(void* dst) {
    return static_cast<Block*>(dst);
}

} // namespace

std::span<const GgmlType> quantizable_types() { return kQuantizable; }

void quantize_row(GgmlType type, const float* src, void* dst, std::uint64_t n) {
    if (std::find(std::begin(kQuantizable), std::end(kQuantizable), type) == std::end(kQuantizable))
        throw Error("quantizing to " + std::string(to_string(type)) + " is not supported");
    const std::uint64_t block_values = traits(type).block_values;
    if (n % block_values != 0)
        throw Error("quantize_row: " + std::to_string(n) + " values are not whole " +
                    std::string(to_string(type)) + " blocks");
    const std::uint64_t blocks = n / block_values;
    switch (type) {
    case GgmlType::F32: std::memcpy(dst, src, n * sizeof(float)); return;
    case GgmlType::F16:
        for (std::uint64_t i = 0; i < n; ++i)
            static_cast<std::uint16_t*>(dst)[i] = cpu::f32_to_f16(src[i]);
        return;
    case GgmlType::BF16: // round to nearest even on the upper 16 bits (finite inputs)
        for (std::uint64_t i = 0; i < n; ++i) {
            const std::uint32_t bits = std::bit_cast<std::uint32_t>(src[i]);
            static_cast<std::uint16_t*>(dst)[i] = static_cast<std::uint16_t>((bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16);
        }
        return;
    case GgmlType::Q8_0: return quantize_q8_0(src, blocks_at<cpu::BlockQ8_0>(dst), blocks);
    case GgmlType::Q4_0: return quantize_q4_0(src, blocks_at<cpu::BlockQ4_0>(dst), blocks);
    case GgmlType::Q5_0: return quantize_q5_0(src, blocks_at<cpu::BlockQ5_0>(dst), blocks);
    case GgmlType::Q4_1: return quantize_affine32<cpu::BlockQ4_1, 15>(src, blocks_at<cpu::BlockQ4_1>(dst), blocks);
    case GgmlType::Q5_1: return quantize_affine32<cpu::BlockQ5_1, 31>(src, blocks_at<cpu::BlockQ5_1>(dst), blocks);
    case GgmlType::IQ4_NL: return quantize_iq4_nl(src, blocks_at<cpu::BlockIQ4_NL>(dst), blocks);
    case GgmlType::IQ4_XS: return quantize_iq4_xs(src, blocks_at<cpu::BlockIQ4_XS>(dst), blocks);
    case GgmlType::Q2_K: return quantize_q2_k(src, blocks_at<cpu::BlockQ2_K>(dst), blocks);
    case GgmlType::Q3_K: return quantize_q3_k(src, blocks_at<cpu::BlockQ3_K>(dst), blocks);
    case GgmlType::MXFP4: return quantize_mxfp4(src, blocks_at<cpu::BlockMXFP4>(dst), blocks);
    default: break; // not in kQuantizable
    }
}

} // namespace kvscope
