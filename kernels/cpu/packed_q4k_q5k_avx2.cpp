// Q4_K/Q5_K tile kernel with AVX2 alone: the AVX-512 kernel's walk on 8-row
// halves, its dot products from maddubs and madd. The sums stay exact:
// codes are at most 31 and activation codes at most 127 in magnitude, so
// maddubs's pairs and the sum of two of them (4 products, |s| <= 15748)
// fit in 16 bits before madd widens them.
#include <immintrin.h>

#include "kernels/cpu/packed_q4k_q5k.h"

namespace kvscope::kernels::cpu::detail {
namespace {

struct YmmAvx2 : q4k_q5k::YmmBase {
    static I dpwssd(I acc, I w, std::int32_t pair) {
        return _mm256_add_epi32(acc, _mm256_madd_epi16(w, _mm256_set1_epi32(pair)));
    }
    static I dot8(I acc, I lo, I hi, const std::int8_t* a) {
        const I pairs = _mm256_add_epi16(_mm256_maddubs_epi16(lo, _mm256_set1_epi32(q4k_q5k::load_i32(a))),
                                         _mm256_maddubs_epi16(hi, _mm256_set1_epi32(q4k_q5k::load_i32(a + 4))));
        return _mm256_add_epi32(acc, _mm256_madd_epi16(pairs, _mm256_set1_epi16(1)));
    }
};

} // namespace

// 6 inputs, as the AVX-VNNI kernel, measured the same way.
PackedGemmFn q4k_q5k_avx2_gemm(bool q5) { return q4k_q5k::gemm_fn<YmmAvx2, 6>(q5); }

} // namespace kvscope::kernels::cpu::detail
