// The Q6_K tile kernel with the dot-product extension, on 4-row passes of
// the tile (packed_q6k.h's NEON walk): per sub-block of 16 columns and
// input, one load of the input's 16 codes and 4 SDOT by element (lane k
// for column group k, the x86 kernels' broadcast dpbusd), starting from
// -32 x bsums, then one multiply-add by the rows' scales. Codes (0..63)
// and activation codes are signed bytes to SDOT; the total is exact, so
// outputs are the NEON kernel's and x86's bits.
#include <arm_neon.h>

#include "kernels/cpu/packed_q6k.h"

namespace kvscope::kernels::cpu::detail {
namespace {

struct Sdot {
    static int32x4_t add(int32x4_t sum, const Q6kCodesNeon& c, const std::int8_t* q) {
        const int8x16_t x = vld1q_s8(q);
        sum = vdotq_laneq_s32(sum, c.w[0], x, 0);
        sum = vdotq_laneq_s32(sum, c.w[1], x, 1);
        sum = vdotq_laneq_s32(sum, c.w[2], x, 2);
        return vdotq_laneq_s32(sum, c.w[3], x, 3);
    }
};

} // namespace

void q6k_gemm_neondot(const std::byte* tile, const std::byte* act, std::size_t act_stride, std::size_t count,
                      std::size_t cols, float* y, std::size_t y_stride, std::size_t rows) {
    q6k_with_count<kQ6kMaxInputsNeon>(
        count, [&](auto n) { q6k_walk_neon<n(), Sdot>(tile, act, act_stride, cols, y, y_stride, rows); });
}

} // namespace kvscope::kernels::cpu::detail
