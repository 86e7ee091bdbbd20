// Baseline AArch64 Advanced SIMD row dot products and activation
// quantization (every arm64 CPU has them, so this file needs no flag).
// The quantized kernels are neon_row_dot.h's, with 16 byte products per
// SMULL + SMLAL2 into 16-bit pairs and SADALP into 32 bits; the float types
// widen f16 (FCVTL) or bf16 (a shift) into FMAs with four accumulators.
#include <arm_neon.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "kernels/cpu/activation_quant.h"
#include "kernels/cpu/float16.h"
#include "kernels/cpu/neon_row_dot.h"
#include "kernels/cpu/row_dot.h"

namespace kvscope::kernels::cpu::detail {

// The same operations as quantize_block_scalar (activation_quant.cpp), 4 at
// a time: the max by comparison and select skips NaN as the scalar one
// does, the clamps send NaN to -127, and FCVTNS rounds to nearest even, so
// the codes are identical.
float quantize_block_neon(const float* x, std::size_t n, std::int8_t* q, std::int16_t* sums16) {
    float32x4_t amax4 = vdupq_n_f32(0.0f);
    for (std::size_t i = 0; i < n; i += 4) {
        const float32x4_t a = vabsq_f32(vld1q_f32(x + i));
        amax4 = vbslq_f32(vcgtq_f32(a, amax4), a, amax4);
    }
    const float amax = vmaxvq_f32(amax4); // no NaN left to propagate
    const float32x4_t inverse = vdupq_n_f32(code_multiplier(amax));
    const float32x4_t lo = vdupq_n_f32(-127.0f), hi = vdupq_n_f32(127.0f);
    for (std::size_t i = 0; i < n; i += 16) {
        int32x4_t codes[4];
        for (std::size_t k = 0; k < 4; ++k) {
            float32x4_t v = vmulq_f32(vld1q_f32(x + i + 4 * k), inverse);
            v = vbslq_f32(vcgeq_f32(v, lo), v, lo);
            v = vbslq_f32(vcleq_f32(v, hi), v, hi);
            codes[k] = vcvtnq_s32_f32(v);
        }
        const int16x8_t c01 = vcombine_s16(vmovn_s32(codes[0]), vmovn_s32(codes[1]));
        const int16x8_t c23 = vcombine_s16(vmovn_s32(codes[2]), vmovn_s32(codes[3]));
        vst1q_s8(q + i, vcombine_s8(vmovn_s16(c01), vmovn_s16(c23)));
        if (sums16 != nullptr)
            sums16[i / 16] = vaddvq_s16(vaddq_s16(c01, c23));
    }
    return amax;
}

namespace {

// 16 signed byte products as int32 partial sums with baseline instructions:
// SMULL/SMLAL2 add products i and i + 8 into 16 bits (at most 2 x 128 x 127),
// SADDLP (SADALP) widens neighbouring pairs into 32 bits (and adds them).
struct WideningDot {
    static int32x4_t dot16(int8x16_t w, int8x16_t a) {
        return vpaddlq_s16(vmlal_high_s8(vmull_s8(vget_low_s8(w), vget_low_s8(a)), w, a));
    }
    static int32x4_t dot32(int8x16_t w0, int8x16_t w1, const std::int8_t* a) {
        const int8x16_t a0 = vld1q_s8(a), a1 = vld1q_s8(a + 16);
        const int16x8_t p0 = vmlal_high_s8(vmull_s8(vget_low_s8(w0), vget_low_s8(a0)), w0, a0);
        const int16x8_t p1 = vmlal_high_s8(vmull_s8(vget_low_s8(w1), vget_low_s8(a1)), w1, a1);
        return vpadalq_s16(vpaddlq_s16(p0), p1);
    }
};

// ---- float weights -------------------------------------------------------

float32x4_t load4_f32(const std::byte* p, std::size_t i) {
    return vld1q_f32(reinterpret_cast<const float*>(p) + i);
}
float32x4_t load4_f16(const std::byte* p, std::size_t i) {
    return vcvt_f32_f16(vld1_f16(reinterpret_cast<const float16_t*>(p) + i));
}
float32x4_t load4_bf16(const std::byte* p, std::size_t i) {
    return vreinterpretq_f32_u32(vshll_n_u16(vld1_u16(reinterpret_cast<const std::uint16_t*>(p) + i), 16));
}
float load1_f32(const std::byte* p, std::size_t i) {
    float v;
    std::memcpy(&v, p + 4 * i, 4);
    return v;
}
float load1_f16(const std::byte* p, std::size_t i) { return neon_half(p + 2 * i); }
float load1_bf16(const std::byte* p, std::size_t i) {
    std::uint16_t bits;
    std::memcpy(&bits, p + 2 * i, 2);
    return bf16_to_f32(bits);
}

// Float weights for N inputs at once: each weight vector is loaded (and
// widened) once. Per input, four accumulators hide the FMA latency; the
// operations and their order do not depend on N, so every input's result
// is bit-identical to its N = 1 result.
template <int N, float32x4_t (*Load4)(const std::byte*, std::size_t), float (*Load1)(const std::byte*, std::size_t)>
void dot_floats_n(const std::byte* w, const std::byte* xb, std::size_t x_stride, std::size_t n, float* out) {
    const float* x[N];
    float32x4_t acc[N][4];
    for (int j = 0; j < N; ++j) {
        x[j] = reinterpret_cast<const float*>(xb + j * x_stride);
        for (int k = 0; k < 4; ++k)
            acc[j][k] = vdupq_n_f32(0.0f);
    }
    std::size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        const float32x4_t w0 = Load4(w, i), w1 = Load4(w, i + 4), w2 = Load4(w, i + 8), w3 = Load4(w, i + 12);
        for (int j = 0; j < N; ++j) {
            // written out: with a loop over k GCC 12 copied every accumulator twice per step
            acc[j][0] = vfmaq_f32(acc[j][0], w0, vld1q_f32(x[j] + i));
            acc[j][1] = vfmaq_f32(acc[j][1], w1, vld1q_f32(x[j] + i + 4));
            acc[j][2] = vfmaq_f32(acc[j][2], w2, vld1q_f32(x[j] + i + 8));
            acc[j][3] = vfmaq_f32(acc[j][3], w3, vld1q_f32(x[j] + i + 12));
        }
    }
    for (; i + 4 <= n; i += 4) {
        const float32x4_t wv = Load4(w, i);
        for (int j = 0; j < N; ++j)
            acc[j][0] = vfmaq_f32(acc[j][0], wv, vld1q_f32(x[j] + i));
    }
    for (int j = 0; j < N; ++j) {
        float sum = vaddvq_f32(vaddq_f32(vaddq_f32(acc[j][0], acc[j][1]), vaddq_f32(acc[j][2], acc[j][3])));
        for (std::size_t t = i; t < n; ++t)
            sum += Load1(w, t) * x[j][t];
        out[j] = sum;
    }
}

// Floats: up to four inputs per pass (16 accumulators of the 32 registers).
template <float32x4_t (*Load4)(const std::byte*, std::size_t), float (*Load1)(const std::byte*, std::size_t)>
void multi_floats(const std::byte* w, const void* x, std::size_t x_stride, std::size_t count, std::size_t cols,
                  float* out) {
    const auto* xb = static_cast<const std::byte*>(x);
    switch (count) {
    case 4: return dot_floats_n<4, Load4, Load1>(w, xb, x_stride, cols, out);
    case 3: return dot_floats_n<3, Load4, Load1>(w, xb, x_stride, cols, out);
    case 2: return dot_floats_n<2, Load4, Load1>(w, xb, x_stride, cols, out);
    default: return dot_floats_n<1, Load4, Load1>(w, xb, x_stride, cols, out);
    }
}

} // namespace

RowDot neon_row_dot(WeightType type) {
    switch (type) {
    case WeightType::F32: return single_input<multi_floats<load4_f32, load1_f32>>;
    case WeightType::F16: return single_input<multi_floats<load4_f16, load1_f16>>;
    case WeightType::BF16: return single_input<multi_floats<load4_bf16, load1_bf16>>;
    default: return quantized_row_dot<WideningDot>(type);
    }
}

RowDotMultiFn neon_row_dot_multi(WeightType type) {
    switch (type) {
    case WeightType::F32: return {multi_floats<load4_f32, load1_f32>, 4};
    case WeightType::F16: return {multi_floats<load4_f16, load1_f16>, 4};
    case WeightType::BF16: return {multi_floats<load4_bf16, load1_bf16>, 4};
    default: return quantized_row_dot_multi<WideningDot>(type);
    }
}

} // namespace kvscope::kernels::cpu::detail
