// NEON (AArch64 Advanced SIMD) KV row operations: kv_row_ops_avx2.cpp's
// structure with 8 values held as two 4-float registers (V8). Each format
// decodes 8 values in registers and feeds them straight to the FMA: FCVTL
// converts halves, bf16 is a widening shift, int4/int2 codes come out of
// one word loaded into every lane with per-lane shifts, int8 is widened
// and converted, fp8 is moved into an f16 by shifts and converted (e4m3x8).
// Scales are loaded once per group of 32 values. The last head_dim % 8
// values go through the portable decoder. The operations take a block's
// run of rows at once (kv_row_ops.h).
#include <arm_neon.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>

#include "kernels/cpu/kv_row_ops.h"
#include "kernels/cpu/neon_math.h"

namespace kvscope::kernels::cpu::detail {
namespace {

// 8 consecutive values.
struct V8 {
    float32x4_t lo, hi;
};

V8 fma8(V8 acc, V8 a, V8 b) { return {vfmaq_f32(acc.lo, a.lo, b.lo), vfmaq_f32(acc.hi, a.hi, b.hi)}; }
V8 load8(const float* p) { return {vld1q_f32(p), vld1q_f32(p + 4)}; }
void store8(float* p, V8 v) {
    vst1q_f32(p, v.lo);
    vst1q_f32(p + 4, v.hi);
}

V8 f16x8(const std::byte* p, std::size_t i) {
    const float16x8_t h = vreinterpretq_f16_u16(vld1q_u16(reinterpret_cast<const std::uint16_t*>(p + 2 * i)));
    return {vcvt_f32_f16(vget_low_f16(h)), vcvt_high_f32_f16(h)};
}

V8 u32x8_to_f32(uint32x4_t lo, uint32x4_t hi) { return {vcvtq_f32_u32(lo), vcvtq_f32_u32(hi)}; }

// Codes i..i+7 (i a multiple of 8) of a packed int4 or int2 row, as floats:
// the row's word in every lane, shifted right by each lane's position.
V8 int4x8(const std::byte* row, std::size_t i) {
    std::uint32_t word;
    std::memcpy(&word, row + i / 2, 4);
    const uint32x4_t all = vdupq_n_u32(word), mask = vdupq_n_u32(0xF);
    const int32x4_t shift_lo = {0, -4, -8, -12}, shift_hi = {-16, -20, -24, -28};
    return u32x8_to_f32(vandq_u32(vshlq_u32(all, shift_lo), mask), vandq_u32(vshlq_u32(all, shift_hi), mask));
}

V8 int2x8(const std::byte* row, std::size_t i) {
    std::uint16_t word;
    std::memcpy(&word, row + i / 4, 2);
    const uint32x4_t all = vdupq_n_u32(word), mask = vdupq_n_u32(0x3);
    const int32x4_t shift_lo = {0, -2, -4, -6}, shift_hi = {-8, -10, -12, -14};
    return u32x8_to_f32(vandq_u32(vshlq_u32(all, shift_lo), mask), vandq_u32(vshlq_u32(all, shift_hi), mask));
}

// What a row's values share within one group of kKvGroup values, loaded
// once per group rather than per 8 values: the row's (int8) or head's
// (fp8, times 2^8: e4m3x8) scale, or the group's (scale, zero) pair.
struct Affine {
    float32x4_t scale, zero;
};

template <RowCode Code>
Affine affine(const std::byte* scales, std::size_t group) {
    if constexpr (Code == RowCode::Fp8) {
        float scale;
        std::memcpy(&scale, scales, 4);
        return {vdupq_n_f32(scale * 0x1p8f), vdupq_n_f32(0.0f)};
    } else if constexpr (Code == RowCode::Int8) {
        return {vdupq_n_f32(f16_at(scales, 0)), vdupq_n_f32(0.0f)};
    } else if constexpr (Code == RowCode::Int4Groups || Code == RowCode::Int2Groups) {
        return {vdupq_n_f32(f16_at(scales, 2 * group)), vdupq_n_f32(f16_at(scales, 2 * group + 1))};
    } else {
        (void)scales, (void)group;
        return {vdupq_n_f32(0.0f), vdupq_n_f32(0.0f)};
    }
}

// e4m3 codes as the f16 values of 2^-8 times them: the sign to bit 15,
// the 7 magnitude bits to bits 7..13, so that e4m3's 4-bit exponent (bias
// 7) sits in f16's 5-bit one (bias 15) and its 3 mantissa bits on top of
// f16's 10. Normals and subnormals alike map exactly (an e4m3 subnormal
// m * 2^-9 becomes the f16 subnormal m * 2^-17), and FCVTL widens them
// exactly; the scale (times 2^8, affine) restores the factor, so
// code * scale is rounded once, as the portable decoder rounds it. The
// bits: b << 8, an arithmetic shift right by 1 (bit 15 keeps the sign and
// copies it to bit 14), bit 14 cleared.
V8 e4m3x8(const std::byte* row, std::size_t i) {
    const uint16x8_t shifted = vshll_n_u8(vld1_u8(reinterpret_cast<const std::uint8_t*>(row + i)), 8);
    const uint16x8_t bits = vbicq_u16(vreinterpretq_u16_s16(vshrq_n_s16(vreinterpretq_s16_u16(shifted), 1)),
                                      vdupq_n_u16(0x4000));
    const float16x8_t h = vreinterpretq_f16_u16(bits);
    return {vcvt_f32_f16(vget_low_f16(h)), vcvt_high_f32_f16(h)};
}

V8 int8x8(const std::byte* row, std::size_t i) {
    const int16x8_t wide = vmovl_s8(vld1_s8(reinterpret_cast<const std::int8_t*>(row + i)));
    return {vcvtq_f32_s32(vmovl_s16(vget_low_s16(wide))), vcvtq_f32_s32(vmovl_high_s16(wide))};
}

V8 scaled(V8 v, const Affine& a) { return {vmulq_f32(v.lo, a.scale), vmulq_f32(v.hi, a.scale)}; }
V8 affine8(V8 codes, const Affine& a) {
    return {vfmaq_f32(a.zero, codes.lo, a.scale), vfmaq_f32(a.zero, codes.hi, a.scale)};
}

// code * scale + zero with each channel's own pair.
V8 per_channel(V8 codes, const std::byte* scales, std::size_t i, std::size_t n) {
    return fma8(f16x8(scales, n + i), codes, f16x8(scales, i));
}

template <RowCode Code>
V8 decode8(const std::byte* row, const std::byte* scales, std::size_t i, std::size_t n, const Affine& a) {
    if constexpr (Code == RowCode::F32) {
        return load8(reinterpret_cast<const float*>(row) + i);
    } else if constexpr (Code == RowCode::F16) {
        return f16x8(row, i);
    } else if constexpr (Code == RowCode::BF16) {
        const uint16x8_t bits = vld1q_u16(reinterpret_cast<const std::uint16_t*>(row + 2 * i));
        return {vreinterpretq_f32_u32(vshll_n_u16(vget_low_u16(bits), 16)),
                vreinterpretq_f32_u32(vshll_high_n_u16(bits, 16))};
    } else if constexpr (Code == RowCode::Fp8) {
        return scaled(e4m3x8(row, i), a);
    } else if constexpr (Code == RowCode::Int8) {
        return scaled(int8x8(row, i), a);
    } else if constexpr (Code == RowCode::Int4Groups) {
        return affine8(int4x8(row, i), a);
    } else if constexpr (Code == RowCode::Int2Groups) {
        return affine8(int2x8(row, i), a);
    } else if constexpr (Code == RowCode::Int4Channels) {
        return per_channel(int4x8(row, i), scales, i, n);
    } else {
        static_assert(Code == RowCode::Int2Channels);
        return per_channel(int2x8(row, i), scales, i, n);
    }
}

// Values i..i+7 of R rows into one accumulator of each (row, head), the
// low and high 4 values: the 8 query values of each head loaded once for
// all R rows, each row's 8 values decoded once for all H heads.
template <RowCode Code, std::size_t H, std::size_t R>
void dot8(const float* q, const std::byte* const (&row)[R], const std::byte* const (&scales)[R], std::size_t i,
          std::size_t n, const Affine (&shared)[R], float32x4_t (&acc)[R][H][2]) {
    V8 q8[H];
#pragma GCC unroll 8
    for (std::size_t h = 0; h < H; ++h)
        q8[h] = load8(q + h * n + i);
#pragma GCC unroll 8
    for (std::size_t r = 0; r < R; ++r) {
        const V8 v = decode8<Code>(row[r], scales[r], i, n, shared[r]);
#pragma GCC unroll 8
        for (std::size_t h = 0; h < H; ++h) {
            acc[r][h][0] = vfmaq_f32(acc[r][h][0], q8[h].lo, v.lo);
            acc[r][h][1] = vfmaq_f32(acc[r][h][1], q8[h].hi, v.hi);
        }
    }
}

// Dot products of R rows x H heads (R * H <= 4), two 8-value accumulators
// each: 4 * R * H independent FMA chains, enough for the 4 FMA pipes of a
// wide core (Apple M-series) at a latency of 4. Rows are walked group by
// group (kKvGroup values, a multiple of 16), 8 values at a time; the last
// n % 8 values go through the portable decoder. A row's sum is reduced in
// the same order whatever rows share the step.
template <RowCode Code, std::size_t H, std::size_t R>
void dot_step(const float* q, const KvRows& rows, std::size_t first_row, std::size_t n, float* out,
              std::size_t out_stride) {
    static_assert(R * H <= 4 && kKvGroup % 16 == 0);
    const std::byte* row[R];
    const std::byte* scales[R];
#pragma GCC unroll 8
    for (std::size_t r = 0; r < R; ++r) {
        row[r] = rows.first + (first_row + r) * rows.stride;
        scales[r] = rows.scales + (first_row + r) * rows.scale_stride;
    }
    // The even and the odd 8s of values. The loops over rows and heads
    // carry "#pragma GCC unroll": GCC 12 keeps arrays of vectors in
    // registers only when their loops are unrolled before its scalarization
    // pass, else it also stores them to the stack at every step.
    float32x4_t even[R][H][2], odd[R][H][2];
#pragma GCC unroll 8
    for (std::size_t r = 0; r < R; ++r)
#pragma GCC unroll 8
        for (std::size_t h = 0; h < H; ++h)
            even[r][h][0] = even[r][h][1] = odd[r][h][0] = odd[r][h][1] = vdupq_n_f32(0.0f);
    const std::size_t whole = n / 8 * 8;
    for (std::size_t first = 0; first < whole; first += kKvGroup) {
        Affine shared[R];
#pragma GCC unroll 8
        for (std::size_t r = 0; r < R; ++r)
            shared[r] = affine<Code>(scales[r], first / kKvGroup);
        const std::size_t end = std::min(whole, first + kKvGroup);
        for (std::size_t i = first; i < end; i += 16) {
            dot8<Code, H, R>(q, row, scales, i, n, shared, even);
            if (i + 8 < end)
                dot8<Code, H, R>(q, row, scales, i + 8, n, shared, odd);
        }
    }
    float dots[R][H];
#pragma GCC unroll 8
    for (std::size_t r = 0; r < R; ++r)
#pragma GCC unroll 8
        for (std::size_t h = 0; h < H; ++h)
            dots[r][h] = vaddvq_f32(vaddq_f32(vaddq_f32(even[r][h][0], odd[r][h][0]), vaddq_f32(even[r][h][1], odd[r][h][1])));
#pragma GCC unroll 8
    for (std::size_t r = 0; r < R; ++r) {
        for (std::size_t i = whole; i < n; ++i) {
            const float x = decode_value<Code>(row[r], scales[r], i, n);
#pragma GCC unroll 8
            for (std::size_t h = 0; h < H; ++h)
                dots[r][h] += q[h * n + i] * x;
        }
#pragma GCC unroll 8
        for (std::size_t h = 0; h < H; ++h)
            out[h * out_stride + first_row + r] = dots[r][h];
    }
}

// Rows [first_row, rows.count) in steps of R rows, then of R / 2, ... 1.
template <RowCode Code, std::size_t H, std::size_t R>
void dot_from(const float* q, const KvRows& rows, std::size_t first_row, std::size_t n, float* out,
              std::size_t out_stride) {
    for (; first_row + R <= rows.count; first_row += R)
        dot_step<Code, H, R>(q, rows, first_row, n, out, out_stride);
    if constexpr (R > 1)
        dot_from<Code, H, R / 2>(q, rows, first_row, n, out, out_stride);
}

template <RowCode Code, std::size_t H>
void dot(const float* q, const KvRows& rows, std::size_t n, float* out, std::size_t out_stride) {
    constexpr std::size_t kRowsPerStep = H == 1 ? 4 : H == 2 ? 2 : 1;
    dot_from<Code, H, kRowsPerStep>(q, rows, 0, n, out, out_stride);
}

// Values [first, first + 8 * V) of the H accumulators, held in registers
// while every row of the run is added in: each accumulator is loaded and
// stored once per run instead of once per row. Per value the rows are
// added in order with one FMA each, as one row at a time would.
template <RowCode Code, std::size_t H, std::size_t V>
void axpy_chunk(const float* w, std::size_t w_stride, const KvRows& rows, std::size_t first, float* acc,
                std::size_t n) {
    V8 sum[H][V];
#pragma GCC unroll 8
    for (std::size_t h = 0; h < H; ++h)
#pragma GCC unroll 8
        for (std::size_t v = 0; v < V; ++v)
            sum[h][v] = load8(acc + h * n + first + 8 * v);
    for (std::size_t r = 0; r < rows.count; ++r) {
        const std::byte* row = rows.first + r * rows.stride;
        const std::byte* scales = rows.scales + r * rows.scale_stride;
        float32x4_t weight[H];
#pragma GCC unroll 8
        for (std::size_t h = 0; h < H; ++h)
            weight[h] = vdupq_n_f32(w[h * w_stride + r]);
        Affine shared{};
#pragma GCC unroll 8
        for (std::size_t v = 0; v < V; ++v) {
            const std::size_t i = first + 8 * v;
            if (v == 0 || i % kKvGroup == 0)
                shared = affine<Code>(scales, i / kKvGroup);
            const V8 x = decode8<Code>(row, scales, i, n, shared);
#pragma GCC unroll 8
            for (std::size_t h = 0; h < H; ++h)
                sum[h][v] = fma8(sum[h][v], V8{weight[h], weight[h]}, x);
        }
    }
#pragma GCC unroll 8
    for (std::size_t h = 0; h < H; ++h)
#pragma GCC unroll 8
        for (std::size_t v = 0; v < V; ++v)
            store8(acc + h * n + first + 8 * v, sum[h][v]);
}

// `vectors` 8-value vectors from `first` on, in chunks of V, then V / 2, ... 1.
template <RowCode Code, std::size_t H, std::size_t V>
void axpy_from(const float* w, std::size_t w_stride, const KvRows& rows, std::size_t first, std::size_t vectors,
               float* acc, std::size_t n) {
    for (; vectors >= V; vectors -= V, first += 8 * V)
        axpy_chunk<Code, H, V>(w, w_stride, rows, first, acc, n);
    if constexpr (V > 1)
        axpy_from<Code, H, V / 2>(w, w_stride, rows, first, vectors, acc, n);
}

template <RowCode Code, std::size_t H>
void axpy(const float* w, std::size_t w_stride, const KvRows& rows, float* acc, std::size_t n) {
    // 16 accumulator registers (64 values for one head), leaving the other
    // 16 for the weights, the decoded values and their scales.
    constexpr std::size_t kVectors = H == 1 ? 8 : H == 2 ? 4 : 2;
    const std::size_t whole = n / 8 * 8;
    axpy_from<Code, H, kVectors>(w, w_stride, rows, 0, whole / 8, acc, n);
    axpy_values<Code, H>(w, w_stride, rows, whole, acc, n);
}

template <RowCode Code>
void decode(const KvRows& rows, std::size_t n, float* out, std::size_t out_stride) {
    const std::size_t whole = n / 8 * 8;
    for (std::size_t r = 0; r < rows.count; ++r) {
        const std::byte* row = rows.first + r * rows.stride;
        const std::byte* scales = rows.scales + r * rows.scale_stride;
        float* values = out + r * out_stride;
        Affine shared{};
        for (std::size_t i = 0; i < whole; i += 8) {
            if (i % kKvGroup == 0)
                shared = affine<Code>(scales, i / kKvGroup);
            store8(values + i, decode8<Code>(row, scales, i, n, shared));
        }
        for (std::size_t i = whole; i < n; ++i)
            values[i] = decode_value<Code>(row, scales, i, n);
    }
}

template <RowCode Code, std::size_t... H>
constexpr KvRowOps ops(std::index_sequence<H...>) {
    return {{dot<Code, H + 1>...}, {axpy<Code, H + 1>...}, decode<Code>};
}

template <RowCode Code>
constexpr KvRowOps ops() {
    return ops<Code>(std::make_index_sequence<kSharedHeads>());
}

} // namespace

// As avx2_softmax_row, 8 scores (two registers) at a time: the scores past
// count, up to the next multiple of 8, are set to -inf after the scale and
// soft cap, so they leave the max alone and come out of the exp as 0.
float neon_softmax_row(float* scores, std::size_t count, float scale, float softcap, float* max_out) {
    const std::size_t padded = (count + 7) / 8 * 8;
    std::fill(scores + count, scores + padded, 0.0f);
    const float32x4_t scale4 = vdupq_n_f32(scale), cap4 = vdupq_n_f32(softcap);
    const float32x4_t minus_inf = vdupq_n_f32(-std::numeric_limits<float>::infinity());
    const float32x4_t lane = {0, 1, 2, 3};
    float32x4_t max4 = minus_inf;
    for (std::size_t p = 0; p < padded; p += 4) {
        float32x4_t x = vmulq_f32(vld1q_f32(scores + p), scale4);
        if (softcap > 0.0f)
            x = vmulq_f32(cap4, tanh4(x));
        if (p + 4 > count) // lanes from count on
            x = vbslq_f32(vcgeq_f32(lane, vdupq_n_f32(static_cast<float>(count) - static_cast<float>(p))), minus_inf, x);
        vst1q_f32(scores + p, x);
        max4 = vmaxq_f32(max4, x);
    }
    *max_out = vmaxvq_f32(max4);
    const float32x4_t max = vdupq_n_f32(*max_out);
    float32x4_t sum[2] = {vdupq_n_f32(0.0f), vdupq_n_f32(0.0f)};
    for (std::size_t p = 0; p < padded; p += 8)
        for (std::size_t half = 0; half < 2; ++half) {
            const float32x4_t e = exp4(vsubq_f32(vld1q_f32(scores + p + 4 * half), max));
            vst1q_f32(scores + p + 4 * half, e);
            sum[half] = vaddq_f32(sum[half], e);
        }
    return vaddvq_f32(vaddq_f32(sum[0], sum[1]));
}

// FCVTN rounds as the FPCR says: to nearest even, Linux's and macOS's
// default, as f32_to_f16.
void neon_store_f16_row(const float* src, std::size_t n, std::byte* row) {
    std::size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const float16x8_t h = vcvt_high_f16_f32(vcvt_f16_f32(vld1q_f32(src + i)), vld1q_f32(src + i + 4));
        vst1q_u16(reinterpret_cast<std::uint16_t*>(row + 2 * i), vreinterpretq_u16_f16(h));
    }
    for (; i < n; ++i)
        put_f16(row, i, src[i]);
}

KvRowOps neon_kv_row_ops(RowCode code) {
    switch (code) {
    case RowCode::F32: return ops<RowCode::F32>();
    case RowCode::F16: return ops<RowCode::F16>();
    case RowCode::BF16: return ops<RowCode::BF16>();
    case RowCode::Fp8: return ops<RowCode::Fp8>();
    case RowCode::Int8: return ops<RowCode::Int8>();
    case RowCode::Int4Groups: return ops<RowCode::Int4Groups>();
    case RowCode::Int2Groups: return ops<RowCode::Int2Groups>();
    case RowCode::Int4Channels: return ops<RowCode::Int4Channels>();
    case RowCode::Int2Channels: return ops<RowCode::Int2Channels>();
    }
    return ops<RowCode::F32>();
}

} // namespace kvscope::kernels::cpu::detail
