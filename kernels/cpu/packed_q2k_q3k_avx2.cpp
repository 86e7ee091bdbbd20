// Q2_K/Q3_K tile kernel with AVX2 alone: the AVX-512 kernel's walk on
// 8-row halves, its dot products from maddubs and madd. Codes are at most
// 7, so maddubs's pairs (|p| <= 2 x 7 x 127) never saturate and the int32
// sums equal dpbusd's.
#include <immintrin.h>

#include "kernels/cpu/packed_q2k_q3k.h"

namespace kvscope::kernels::cpu::detail {
namespace {

struct YmmAvx2 : q4k_q5k::YmmBase {
    static I dpwssd(I acc, I w, std::int32_t pair) {
        return _mm256_add_epi32(acc, _mm256_madd_epi16(w, _mm256_set1_epi32(pair)));
    }
    static I dot4(I acc, I w, const std::int8_t* a) {
        const I pairs = _mm256_maddubs_epi16(w, _mm256_set1_epi32(q4k_q5k::load_i32(a)));
        return _mm256_add_epi32(acc, _mm256_madd_epi16(pairs, _mm256_set1_epi16(1)));
    }
};

} // namespace

PackedGemmFn q2k_q3k_avx2_gemm(bool q3) { return q2k_q3k::gemm_fn<YmmAvx2, 4>(q3); }

} // namespace kvscope::kernels::cpu::detail
