// The quantized row dot products with the Armv8.2 dot-product extension:
// SDOT adds four signed byte products into each int32 lane, one instruction
// for 16 products where baseline NEON needs three. This file alone is
// compiled with +dotprod; matmul.cpp calls it only on the NeonDot and
// NeonI8mm paths, which simd_path.cpp offers only on CPUs with dotprod. The
// kernels are neon_row_dot.h's, as in matmul_neon.cpp: the integer sums are
// exact in both, so the results are bit-identical (tested). The float
// types have nothing to gain here and keep matmul_neon.cpp's kernels.
#include <arm_neon.h>

#include "kernels/cpu/neon_row_dot.h"
#include "kernels/cpu/row_dot.h"

namespace kvscope::kernels::cpu::detail {
namespace {

struct SdotDot {
    static int32x4_t dot16(int8x16_t w, int8x16_t a) { return vdotq_s32(vdupq_n_s32(0), w, a); }
    static int32x4_t dot32(int8x16_t w0, int8x16_t w1, const std::int8_t* a) {
        return vdotq_s32(vdotq_s32(vdupq_n_s32(0), w0, vld1q_s8(a)), w1, vld1q_s8(a + 16));
    }
};

} // namespace

RowDot neondot_row_dot(WeightType type) { return quantized_row_dot<SdotDot>(type); }

RowDotMultiFn neondot_row_dot_multi(WeightType type) { return quantized_row_dot_multi<SdotDot>(type); }

} // namespace kvscope::kernels::cpu::detail
