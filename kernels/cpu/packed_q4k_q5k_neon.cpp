// Q4_K/Q5_K/IQ4_XS tile kernel with baseline Advanced SIMD (no SDOT): the
// walk of packed_q4k_q5k.h on 4-row passes, its dot products from widening
// multiplies. Per group, the low and high codes' products with the input's
// two 4-code lanes (broadcast) meet in one int16 vector (vmull + vmlal per
// row pair), then pairwise additions fold each row's 8 products into its
// int32 lane. Q4_K/Q5_K: codes 0..31 times |a| <= 127, so a 16-bit
// pairwise sum of 4 products (<= 15748) cannot overflow and one addp +
// sadalp reduce it. IQ4_XS's values reach -127, where two products
// (<= 32258) are all 16 bits hold: they widen right after vmlal. Every sum
// is exact, so outputs are the dot-product kernel's bits.
#include <arm_neon.h>

#include "kernels/cpu/packed_q4k_q5k.h"

namespace kvscope::kernels::cpu::detail {
namespace {

// Row r's lo codes times the input's 4 codes at a, plus its hi codes
// times the 4 at a + 4, as 16-bit lanes: rows 0-1 in `low`, 2-3 in `high`,
// each row's 4 lanes two products each.
struct Products {
    int16x8_t low, high;
};

Products products(int32x4_t lo, int32x4_t hi, const std::int8_t* a) {
    const int32x2_t x = vreinterpret_s32_s8(vld1_s8(a));
    const int8x16_t xl = vreinterpretq_s8_s32(vdupq_lane_s32(x, 0)), xh = vreinterpretq_s8_s32(vdupq_lane_s32(x, 1));
    const int8x16_t l = vreinterpretq_s8_s32(lo), h = vreinterpretq_s8_s32(hi);
    return {vmlal_s8(vmull_s8(vget_low_s8(l), vget_low_s8(xl)), vget_low_s8(h), vget_low_s8(xh)),
            vmlal_high_s8(vmull_high_s8(l, xl), h, xh)};
}

struct Neon : q4k_q5k::NeonBase {
    static I dot8(I acc, I lo, I hi, const std::int8_t* a) {
        const Products p = products(lo, hi, a);
        return vpadalq_s16(acc, vpaddq_s16(p.low, p.high));
    }
    static I dot8_table(I acc, I lo, I hi, const std::int8_t* a) {
        const Products p = products(lo, hi, a);
        return vaddq_s32(acc, vpaddq_s32(vpaddlq_s16(p.low), vpaddlq_s16(p.high)));
    }
};

} // namespace

// 8 inputs, as the dot-product kernel (no spills in the disassembly).
PackedGemmFn q4k_q5k_neon_gemm(KFormat format) { return q4k_q5k::gemm_fn<Neon, 8>(format); }

} // namespace kvscope::kernels::cpu::detail
