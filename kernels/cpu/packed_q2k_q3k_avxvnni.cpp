// Q2_K/Q3_K tile kernel with AVX-VNNI: the AVX-512 kernel's walk on 8-row
// halves, with the VEX-encoded 256-bit dpbusd and dpwssd.
#include <immintrin.h>

#include "kernels/cpu/packed_q2k_q3k.h"

namespace kvscope::kernels::cpu::detail {
namespace {

struct YmmVnni : q4k_q5k::YmmBase {
    static I dpwssd(I acc, I w, std::int32_t pair) { return _mm256_dpwssd_avx_epi32(acc, w, _mm256_set1_epi32(pair)); }
    static I dot4(I acc, I w, const std::int8_t* a) {
        return _mm256_dpbusd_avx_epi32(acc, w, _mm256_set1_epi32(q4k_q5k::load_i32(a)));
    }
};

} // namespace

PackedGemmFn q2k_q3k_avxvnni_gemm(bool q3) { return q2k_q3k::gemm_fn<YmmVnni, 4>(q3); }

} // namespace kvscope::kernels::cpu::detail
