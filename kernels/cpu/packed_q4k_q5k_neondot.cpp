// Q4_K/Q5_K/IQ4_XS tile kernel with the dot-product extension: the walk of
// packed_q4k_q5k.h on 4-row passes, one SDOT by element per 4 rows x 4
// codes, the input's 8 codes of a group loaded once as lanes 0 and 1 (the
// x86 kernels' broadcast dpbusd). Codes (0..31, IQ4_XS's signed table
// values) and activation codes are both signed bytes to SDOT, so every sum
// is the exact int32 of the other kernels and the float steps are the
// walk's: the same bits as the NEON kernel and x86's.
#include <arm_neon.h>

#include "kernels/cpu/packed_q4k_q5k.h"

namespace kvscope::kernels::cpu::detail {
namespace {

struct NeonDot : q4k_q5k::NeonBase {
    static I dot8(I acc, I lo, I hi, const std::int8_t* a) {
        const int8x8_t x = vld1_s8(a);
        acc = vdotq_lane_s32(acc, vreinterpretq_s8_s32(lo), x, 0);
        return vdotq_lane_s32(acc, vreinterpretq_s8_s32(hi), x, 1);
    }
    static I dot8_table(I acc, I lo, I hi, const std::int8_t* a) { return dot8(acc, lo, hi, a); }
};

} // namespace

// 8 inputs: 8 x 3 accumulators (sums, super-block, output) and the decoded
// codes within the 32 registers (no spills in the disassembly).
PackedGemmFn q4k_q5k_neondot_gemm(KFormat format) { return q4k_q5k::gemm_fn<NeonDot, 8>(format); }

} // namespace kvscope::kernels::cpu::detail
