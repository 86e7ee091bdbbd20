// Q4_K/Q5_K/IQ4_XS tile kernel with AVX-512 VNNI: a whole 16-row tile per pass,
// one row per 32-bit lane of a zmm. Per sub-block of 32 values and input:
// 8 dpbusd (each with the input's 4 codes broadcast from memory), one
// convert and one FMA; decoding the codes (per group of 8 values: and,
// shift, and) and the rows' d * sc are shared by the call's inputs.
#include "kernels/cpu/avx512_intrinsics.h"

#include "kernels/cpu/packed_q4k_q5k.h"

namespace kvscope::kernels::cpu::detail {
namespace {

struct Zmm : q4k_q5k::ZmmBase {
    static I dpwssd(I acc, I w, std::int32_t pair) { return _mm512_dpwssd_epi32(acc, w, _mm512_set1_epi32(pair)); }
    static I dot8(I acc, I lo, I hi, const std::int8_t* a) {
        acc = _mm512_dpbusd_epi32(acc, lo, _mm512_set1_epi32(q4k_q5k::load_i32(a)));
        return _mm512_dpbusd_epi32(acc, hi, _mm512_set1_epi32(q4k_q5k::load_i32(a + 4)));
    }
    // IQ4_XS's codes are its values + 128.
    static I table_start(int act_sum) { return _mm512_set1_epi32(-128 * act_sum); }
    static I dot8_table(I acc, I lo, I hi, const std::int8_t* a) { return dot8(acc, lo, hi, a); }
};

} // namespace

// 8 inputs: 8 x 3 accumulators (sums, super-block, output) and the
// decoded codes stay within the 32 zmm.
PackedGemmFn q4k_q5k_avx512_gemm(KFormat format) { return q4k_q5k::gemm_fn<Zmm, 8>(format); }

} // namespace kvscope::kernels::cpu::detail
