// Q4_K/Q5_K/IQ4_XS tile kernel with AVX2 alone: the AVX-512 kernel's walk on 8-row
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
    // IQ4_XS: codes kIq4nlValues + 128 would saturate maddubs, so the
    // signed values come back (code ^ 0x80) and |q| meets a with q's sign;
    // each maddubs is widened on its own (two would overflow 16 bits), and
    // with no offset left in the codes the sums start at 0.
    static I table_start(int) { return zero_i(); }
    static I dot8_table(I acc, I lo, I hi, const std::int8_t* a) {
        const auto dot4 = [](I codes, std::int32_t x) {
            const I q = _mm256_xor_si256(codes, _mm256_set1_epi8(static_cast<char>(0x80)));
            const I pairs = _mm256_maddubs_epi16(_mm256_sign_epi8(q, q), _mm256_sign_epi8(_mm256_set1_epi32(x), q));
            return _mm256_madd_epi16(pairs, _mm256_set1_epi16(1));
        };
        return _mm256_add_epi32(_mm256_add_epi32(acc, dot4(lo, q4k_q5k::load_i32(a))),
                                dot4(hi, q4k_q5k::load_i32(a + 4)));
    }
};

} // namespace

// 6 inputs, as the AVX-VNNI kernel, measured the same way.
PackedGemmFn q4k_q5k_avx2_gemm(KFormat format) { return q4k_q5k::gemm_fn<YmmAvx2, 6>(format); }

} // namespace kvscope::kernels::cpu::detail
