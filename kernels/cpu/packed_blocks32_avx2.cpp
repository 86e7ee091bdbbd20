// The blocks-of-32 tile kernels (Q8_0, Q4_0, Q5_0, Q4_1, Q5_1, IQ4_NL,
// MXFP4) with AVX2 alone: the
// kernel of packed_blocks32.h, each dpbusd done as maddubs (u8 x s8 ->
// pairs in s16) + madd (-> s32) + add. This file alone is compiled with
// -mavx2 -mfma -mf16c.
#include <immintrin.h>

#include "kernels/cpu/packed_blocks32.h"

namespace kvscope::kernels::cpu::detail::blocks32 {
namespace {

// maddubs saturates a pair sum above 32767. Q4_0/Q5_0/Q4_1/Q5_1/MXFP4
// codes are at most 31 (31 x 127 x 2 fits). Q8_0's and IQ4_NL's codes + 128
// would not, so they take the signed codes back (q = code ^ 0x80) and
// multiply |q| by a with q's sign: |pair| <= 128 x 127 x 2 fits, and with
// no offset in the codes the sums start at 0. The int32 sums equal
// dpbusd's exactly.
struct Avx2Dot {
    template <WeightType T>
    static constexpr bool kSigned = T == WeightType::Q8_0 || T == WeightType::IQ4_NL;
    template <WeightType T>
    static __m256i start(std::int32_t act_sum) {
        if constexpr (kSigned<T>)
            return _mm256_setzero_si256();
        else
            return _mm256_set1_epi32(-code_offset(T) * act_sum);
    }
    template <WeightType T>
    static __m256i dot(__m256i acc, __m256i w, __m256i a) {
        __m256i pairs;
        if constexpr (kSigned<T>) {
            const __m256i q = _mm256_xor_si256(w, _mm256_set1_epi8(static_cast<char>(0x80)));
            pairs = _mm256_maddubs_epi16(_mm256_sign_epi8(q, q), _mm256_sign_epi8(a, q));
        } else {
            pairs = _mm256_maddubs_epi16(w, a);
        }
        return _mm256_add_epi32(acc, _mm256_madd_epi16(pairs, _mm256_set1_epi16(1)));
    }
};

} // namespace

PackedGemmFn avx2_packed_gemm(WeightType type) { return ymm_packed_gemm<Avx2Dot>(type); }

} // namespace kvscope::kernels::cpu::detail::blocks32
