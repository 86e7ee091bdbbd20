// The blocks-of-32 tile kernels (Q8_0, Q4_0, Q5_0, Q4_1, Q5_1, IQ4_NL,
// MXFP4) with the Armv8.2 dot product: the lanes kernel of
// packed_blocks32.h, one SDOT by element per group, 4 rows and input
// (each row's 4 codes against the input's 4 codes of the group, a lane of
// the input's code register: x86's dpbusd against a broadcast, without
// the broadcast). This file alone is compiled with +dotprod; packed_gemm
// calls it only on CPUs that report it.
#include "kernels/cpu/packed_blocks32.h"

namespace kvscope::kernels::cpu::detail::blocks32 {
namespace {

// 4 x (2 float + 1 int32 accumulators + 2 code registers) + the decoded
// quads fit 32 q registers.
constexpr std::size_t kMaxInputs = 4;

} // namespace

PackedGemmFn neondot_packed_gemm(WeightType type) {
    return neon_packed_gemm_of<LanesHalf<SdotDot>::template Of, kMaxInputs>(type);
}

} // namespace kvscope::kernels::cpu::detail::blocks32
