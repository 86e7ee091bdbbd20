// The Q6_K tile kernel with baseline Advanced SIMD (no SDOT), on 4-row
// passes of the tile (packed_q6k.h's NEON walk). Per sub-block and input
// the 4 column groups' codes meet the input's 4-code lanes (each
// broadcast) in widening multiplies, groups 0 and 1 (then 2 and 3) into
// one int16 vector with vmull + vmlal; one addp adds each row's pairs, at
// most 4 x 63 x 127 = 32004 (activation codes never reach -128), and
// sadalp widens them into the rows' int32 lanes. The total is exact, so
// outputs are the dot-product kernel's bits.
#include <arm_neon.h>

#include "kernels/cpu/packed_q6k.h"

namespace kvscope::kernels::cpu::detail {
namespace {

// Groups k and k + 1 of the 4 rows times the input's codes x (lanes k, k + 1).
template <int K>
int32x4_t add_pair(int32x4_t sum, const Q6kCodesNeon& c, int32x4_t x) {
    const int8x16_t a0 = vreinterpretq_s8_s32(vdupq_laneq_s32(x, K));
    const int8x16_t a1 = vreinterpretq_s8_s32(vdupq_laneq_s32(x, K + 1));
    const int16x8_t low = vmlal_s8(vmull_s8(vget_low_s8(c.w[K]), vget_low_s8(a0)), vget_low_s8(c.w[K + 1]),
                                   vget_low_s8(a1));
    const int16x8_t high = vmlal_high_s8(vmull_high_s8(c.w[K], a0), c.w[K + 1], a1);
    return vpadalq_s16(sum, vpaddq_s16(low, high));
}

struct Widening {
    static int32x4_t add(int32x4_t sum, const Q6kCodesNeon& c, const std::int8_t* q) {
        const int32x4_t x = vreinterpretq_s32_s8(vld1q_s8(q));
        return add_pair<2>(add_pair<0>(sum, c, x), c, x);
    }
};

} // namespace

void q6k_gemm_neon(const std::byte* tile, const std::byte* act, std::size_t act_stride, std::size_t count,
                   std::size_t cols, float* y, std::size_t y_stride, std::size_t rows) {
    q6k_with_count<kQ6kMaxInputsNeon>(
        count, [&](auto n) { q6k_walk_neon<n(), Widening>(tile, act, act_stride, cols, y, y_stride, rows); });
}

} // namespace kvscope::kernels::cpu::detail
