// Internal to the *_neon.cpp files: e^x and tanh of 4 floats (the NEON
// counterparts of avx2_exp.h and avx2_tanh.h, the same Cephes polynomials
// with the same operations per lane, so a lane's result is the AVX2
// version's bits), for the decode softmax (kv_row_ops_neon.cpp), the
// prompt tiles (prompt_attention_neon.cpp) and the gated activations and
// soft cap (activation_neon.cpp).
#pragma once

#include <arm_neon.h>

#include <initializer_list>

// Internal linkage (the unnamed namespace): see float16.h.
namespace kvscope::kernels::cpu::detail {
namespace {

// e^x for x <= 0 (Cephes' expf: x = n ln 2 + r, |r| <= ln 2 / 2, a degree-7
// polynomial for e^r, 2^n put into the exponent; within 2 ulp). Below
// -87.3 (e^x under the smallest normal float), and for -inf, 0. NaN stays
// NaN (FMAX returns the NaN).
inline float32x4_t exp4(float32x4_t x) {
    const float32x4_t lowest = vdupq_n_f32(-87.33654f); // ln(2^-126)
    const uint32x4_t underflow = vcltq_f32(x, lowest);
    x = vmaxq_f32(lowest, x);
    const float32x4_t n = vrndnq_f32(vmulq_f32(x, vdupq_n_f32(1.44269504088896341f)));
    float32x4_t r = vfmsq_f32(x, n, vdupq_n_f32(0.693359375f));
    r = vfmsq_f32(r, n, vdupq_n_f32(-2.12194440e-4f));
    float32x4_t y = vdupq_n_f32(1.9875691500e-4f);
    for (const float c : {1.3981999507e-3f, 8.3334519073e-3f, 4.1665795894e-2f, 1.6666665459e-1f, 5.0000001201e-1f})
        y = vfmaq_f32(vdupq_n_f32(c), y, r);
    y = vfmaq_f32(vaddq_f32(r, vdupq_n_f32(1.0f)), y, vmulq_f32(r, r));
    const int32x4_t exponent = vshlq_n_s32(vaddq_s32(vcvtq_s32_f32(n), vdupq_n_s32(127)), 23);
    const float32x4_t value = vmulq_f32(y, vreinterpretq_f32_s32(exponent));
    return vreinterpretq_f32_u32(vbicq_u32(vreinterpretq_u32_f32(value), underflow));
}

// tanh(x) as Cephes' tanhf computes it: for |x| <= 0.625 an odd
// polynomial, x + x^3 P(x^2); above, (1 - e) / (1 + e) with e = e^(-2|x|)
// (no cancellation there: e < 0.29), the sign put back. Within a few ulp
// of tanh; +-1 from |x| ~ 9 on, +-1 for +-inf.
inline float32x4_t tanh4(float32x4_t x) {
    const float32x4_t magnitude = vabsq_f32(x);
    const float32x4_t one = vdupq_n_f32(1.0f);
    const float32x4_t e = exp4(vmulq_f32(magnitude, vdupq_n_f32(-2.0f)));
    const uint32x4_t sign = vandq_u32(vreinterpretq_u32_f32(x), vdupq_n_u32(0x80000000u));
    const float32x4_t large = vreinterpretq_f32_u32(
        vorrq_u32(vreinterpretq_u32_f32(vdivq_f32(vsubq_f32(one, e), vaddq_f32(one, e))), sign));
    const float32x4_t z = vmulq_f32(x, x);
    float32x4_t p = vdupq_n_f32(-5.70498872745e-3f);
    for (const float c : {2.06390887954e-2f, -5.37397155531e-2f, 1.33314422036e-1f, -3.33332819422e-1f})
        p = vfmaq_f32(vdupq_n_f32(c), p, z);
    const float32x4_t small = vfmaq_f32(x, vmulq_f32(p, z), x);
    return vbslq_f32(vcgtq_f32(magnitude, vdupq_n_f32(0.625f)), large, small);
}

} // namespace
} // namespace kvscope::kernels::cpu::detail
