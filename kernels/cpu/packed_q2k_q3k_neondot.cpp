// Q2_K/Q3_K tile kernel with the dot-product extension: the walk of
// packed_q2k_q3k.h on 4-row passes (packed_q4k_q5k.h's NeonBase), one SDOT
// per group of 4 codes x 4 rows with the input's 4 codes broadcast, as
// dpbusd on x86. Codes (0..7) and activation codes are signed bytes to
// SDOT; the sums are exact, so outputs are the NEON kernel's bits.
#include <arm_neon.h>

#include "kernels/cpu/packed_q2k_q3k.h"

namespace kvscope::kernels::cpu::detail {
namespace {

struct NeonDot : q4k_q5k::NeonBase {
    static I dot4(I acc, I w, const std::int8_t* a) {
        return vdotq_s32(acc, vreinterpretq_s8_s32(w), vreinterpretq_s8_s32(vdupq_n_s32(q4k_q5k::load_i32(a))));
    }
};

} // namespace

// 8 inputs: 8 x 4 accumulators would not fit with the codes; 6 x 4 do.
PackedGemmFn q2k_q3k_neondot_gemm(bool q3) { return q2k_q3k::gemm_fn<NeonDot, 6>(q3); }

} // namespace kvscope::kernels::cpu::detail
