// Q4_K/Q5_K/IQ4_XS tile kernel with AVX-VNNI: the AVX-512 kernel's walk on 8-row
// halves, with the VEX-encoded 256-bit dpbusd and dpwssd (16 per sub-block
// of 32 values and 16 rows, per input).
#include <immintrin.h>

#include "kernels/cpu/packed_q4k_q5k.h"

namespace kvscope::kernels::cpu::detail {
namespace {

struct YmmVnni : q4k_q5k::YmmBase {
    static I dpwssd(I acc, I w, std::int32_t pair) { return _mm256_dpwssd_avx_epi32(acc, w, _mm256_set1_epi32(pair)); }
    static I dot8(I acc, I lo, I hi, const std::int8_t* a) {
        acc = _mm256_dpbusd_avx_epi32(acc, lo, _mm256_set1_epi32(q4k_q5k::load_i32(a)));
        return _mm256_dpbusd_avx_epi32(acc, hi, _mm256_set1_epi32(q4k_q5k::load_i32(a + 4)));
    }
    // IQ4_XS's codes are its values + 128.
    static I table_start(int act_sum) { return _mm256_set1_epi32(-128 * act_sum); }
    static I dot8_table(I acc, I lo, I hi, const std::int8_t* a) { return dot8(acc, lo, hi, a); }
};

} // namespace

// 6 inputs: their accumulators spill a few of the 16 ymm, but each decoded
// group serves more inputs. 2, 3, 4, 6 and 8 measured (8 inputs, one thread,
// busy machine): 6 and 8 about 10-20% ahead of 2-4, 6 slightly ahead of 8.
PackedGemmFn q4k_q5k_avxvnni_gemm(KFormat format) { return q4k_q5k::gemm_fn<YmmVnni, 6>(format); }

} // namespace kvscope::kernels::cpu::detail
