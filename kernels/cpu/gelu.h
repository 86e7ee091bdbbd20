// Internal to activation*.cpp: the GELU of the GeGLU gate (activation.h's
// gelu_mul) as llama.cpp's CPU backend evaluates it, one value at a time:
// the portable path, and the AVX2 path's last n % 8 values.
#pragma once

#include <cmath>

#include "kernels/cpu/float16.h"
#include "kernels/cpu/float16_encode.h"

// Internal linkage (the unnamed namespace): see float16.h.
namespace kvscope::kernels::cpu::detail {
namespace {

// ggml's constants (ggml-cpu/vec.h): GELU_COEF_A, SQRT_2_OVER_PI, and the
// inputs from which its f16 table is not consulted (0 below -10, the input
// itself above 10).
constexpr float kGeluCoefA = 0.044715f;
constexpr float kGeluSqrt2OverPi = 0.79788456080286535587989211986876f;
constexpr float kGeluCutoff = 10.0f;

// The tanh argument u = sqrt(2/pi) (x + 0.044715 x^3), written as ggml does.
inline float gelu_u(float x) { return kGeluSqrt2OverPi * x * (1.0f + kGeluCoefA * x * x); }

// gelu(x) = x/2 (1 + tanh u) = x sigmoid(2u) for x rounded to f16, the
// result rounded to f16, as ggml's table holds it. Inside (-10, 10) u
// stays within +-44, so exp(-2u) is finite.
inline float gelu_f16(float x) {
    if (x <= -kGeluCutoff)
        return 0.0f;
    if (x >= kGeluCutoff)
        return x;
    const float h = f16_to_f32(f32_to_f16(x));
    return f16_to_f32(f32_to_f16(h / (1.0f + std::exp(-2.0f * gelu_u(h)))));
}

} // namespace
} // namespace kvscope::kernels::cpu::detail
