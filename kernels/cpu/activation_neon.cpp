// NEON element-wise pieces of the transformer block (activation.h), 4
// values at a time with activation_avx2.cpp's operations per lane (the
// exp and tanh of neon_math.h), so each value is the AVX2 path's bits;
// the last n % 4 values go through the portable formulas.
#include <arm_neon.h>

#include <cmath>

#include "kernels/cpu/activation.h"
#include "kernels/cpu/gelu.h"
#include "kernels/cpu/neon_math.h"

namespace kvscope::kernels::cpu::detail {
namespace {

// g * sigmoid(g) for g < 0 where `negative`, from e = e^-|g| (at most 1,
// never overflows): 1 / (1 + e) for g >= 0, e / (1 + e) below.
float32x4_t sigmoid_of(float32x4_t e, uint32x4_t negative) {
    const float32x4_t one = vdupq_n_f32(1.0f);
    return vdivq_f32(vbslq_f32(negative, e, one), vaddq_f32(one, e));
}

float32x4_t minus_abs(float32x4_t x) { return vnegq_f32(vabsq_f32(x)); }

// x rounded to f16 and back (FCVTN, round to nearest even as f32_to_f16).
float32x4_t f16_round4(float32x4_t x) { return vcvt_f32_f16(vcvt_f16_f32(x)); }

// gelu_f16 (gelu.h) of 4 gates: sigmoid(2u) as in neon_silu_mul.
float32x4_t gelu_f16x4(float32x4_t x) {
    const float32x4_t one = vdupq_n_f32(1.0f);
    const float32x4_t h = f16_round4(x);
    const float32x4_t u = vmulq_f32(vmulq_f32(vdupq_n_f32(kGeluSqrt2OverPi), h),
                                    vfmaq_f32(one, vmulq_f32(vdupq_n_f32(kGeluCoefA), h), h));
    const float32x4_t e = exp4(minus_abs(vaddq_f32(u, u)));
    const float32x4_t gelu = f16_round4(vmulq_f32(h, sigmoid_of(e, vcltzq_f32(u))));
    const float32x4_t cutoff = vdupq_n_f32(kGeluCutoff);
    const float32x4_t above = vbslq_f32(vcgeq_f32(x, cutoff), x, gelu);
    return vreinterpretq_f32_u32(
        vbicq_u32(vreinterpretq_u32_f32(above), vcleq_f32(x, vsubq_f32(vdupq_n_f32(0.0f), cutoff))));
}

} // namespace

void neon_silu_mul(const float* gate, const float* up, float* out, std::size_t n) {
    std::size_t i = 0;
    for (; i + 4 <= n; i += 4) {
        const float32x4_t g = vld1q_f32(gate + i);
        const float32x4_t sigmoid = sigmoid_of(exp4(minus_abs(g)), vcltzq_f32(g));
        vst1q_f32(out + i, vmulq_f32(vmulq_f32(g, sigmoid), vld1q_f32(up + i)));
    }
    for (; i < n; ++i)
        out[i] = gate[i] / (1.0f + std::exp(-gate[i])) * up[i];
}

void neon_gelu_mul(const float* gate, const float* up, float* out, std::size_t n) {
    std::size_t i = 0;
    for (; i + 4 <= n; i += 4)
        vst1q_f32(out + i, vmulq_f32(gelu_f16x4(vld1q_f32(gate + i)), vld1q_f32(up + i)));
    for (; i < n; ++i)
        out[i] = gelu_f16(gate[i]) * up[i];
}

void neon_softcap(float* x, std::size_t n, float cap) {
    const float inverse = 1.0f / cap;
    const float32x4_t cap4 = vdupq_n_f32(cap), inverse4 = vdupq_n_f32(inverse);
    std::size_t i = 0;
    for (; i + 4 <= n; i += 4)
        vst1q_f32(x + i, vmulq_f32(cap4, tanh4(vmulq_f32(vld1q_f32(x + i), inverse4))));
    for (; i < n; ++i)
        x[i] = cap * std::tanh(x[i] * inverse);
}

} // namespace kvscope::kernels::cpu::detail
