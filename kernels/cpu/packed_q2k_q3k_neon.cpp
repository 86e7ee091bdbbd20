// Q2_K/Q3_K tile kernel with baseline Advanced SIMD (no SDOT): the walk of
// packed_q2k_q3k.h on 4-row passes (packed_q4k_q5k.h's NeonBase), each
// group's products from two widening multiplies by the input's 4 codes
// broadcast, added in pairs (<= 2 x 7 x 127, no overflow in 16 bits) and
// the pairs into the rows' int32 lanes (sadalp). The sums are exact, so
// outputs are the dot-product kernel's bits.
#include <arm_neon.h>

#include "kernels/cpu/packed_q2k_q3k.h"

namespace kvscope::kernels::cpu::detail {
namespace {

struct Neon : q4k_q5k::NeonBase {
    static I dot4(I acc, I w, const std::int8_t* a) {
        const int8x16_t x = vreinterpretq_s8_s32(vdupq_n_s32(q4k_q5k::load_i32(a)));
        const int8x16_t c = vreinterpretq_s8_s32(w);
        const int16x8_t pairs = vpaddq_s16(vmull_s8(vget_low_s8(c), vget_low_s8(x)), vmull_high_s8(c, x));
        return vpadalq_s16(acc, pairs);
    }
};

} // namespace

// 6 inputs, as the dot-product kernel.
PackedGemmFn q2k_q3k_neon_gemm(bool q3) { return q2k_q3k::gemm_fn<Neon, 6>(q3); }

} // namespace kvscope::kernels::cpu::detail
