// Q2_K/Q3_K tile kernel with AVX-512 VNNI: a whole 16-row tile per pass,
// one row per 32-bit lane. Per sub-block of 16 values and input: 4 dpbusd
// (the input's 4 codes broadcast), one vpmulld by the rows' scales and one
// add; decoding the codes (2 ops a group, Q3_K 2-3 more) is shared by the
// call's inputs.
#include "kernels/cpu/avx512_intrinsics.h"

#include "kernels/cpu/packed_q2k_q3k.h"

namespace kvscope::kernels::cpu::detail {
namespace {

struct Zmm : q4k_q5k::ZmmBase {
    static I dpwssd(I acc, I w, std::int32_t pair) { return _mm512_dpwssd_epi32(acc, w, _mm512_set1_epi32(pair)); }
    static I dot4(I acc, I w, const std::int8_t* a) {
        return _mm512_dpbusd_epi32(acc, w, _mm512_set1_epi32(q4k_q5k::load_i32(a)));
    }
};

} // namespace

// 8 inputs: 8 x 4 accumulators (sums, scaled, mins, output) near the 32 zmm.
PackedGemmFn q2k_q3k_avx512_gemm(bool q3) { return q2k_q3k::gemm_fn<Zmm, 8>(q3); }

} // namespace kvscope::kernels::cpu::detail
