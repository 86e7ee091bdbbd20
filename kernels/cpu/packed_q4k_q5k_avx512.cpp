// Q4_K/Q5_K/IQ4_XS tile kernel with AVX-512 VNNI: a whole 16-row tile per pass,
// one row per 32-bit lane of a zmm. Per sub-block of 32 values and input:
// 8 dpbusd (each with the input's 4 codes broadcast from memory), one
// convert and one FMA; decoding the codes (per group of 8 values: and,
// shift, and) and the rows' d * sc are shared by the call's inputs.
#include "kernels/cpu/avx512_intrinsics.h"

#include "kernels/cpu/packed_q4k_q5k.h"

namespace kvscope::kernels::cpu::detail {
namespace {

struct Zmm {
    using I = __m512i;
    using F = __m512;
    static constexpr std::size_t kRows = 16;

    static I zero_i() { return _mm512_setzero_si512(); }
    static F zero_f() { return _mm512_setzero_ps(); }
    static I set1_i8(char v) { return _mm512_set1_epi8(v); }
    static F set1_f(float v) { return _mm512_set1_ps(v); }
    static I load(const std::byte* p) { return _mm512_loadu_si512(p); }
    static F load_f16(const std::byte* p) {
        return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
    }
    static I u8_to_i32(const std::byte* p) {
        return _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    }
    static I i8_to_i32(const std::byte* p) {
        return _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    }
    static I iq4nl_codes(I nibbles) {
        const __m128i table = _mm_set_epi64x(q4k_q5k::iq4nl_table_half(1), q4k_q5k::iq4nl_table_half(0));
        return _mm512_shuffle_epi8(_mm512_broadcast_i32x4(table), nibbles);
    }
    static I and_(I a, I b) { return _mm512_and_si512(a, b); }
    static I or_(I a, I b) { return _mm512_or_si512(a, b); }
    static I srli16(I a, int n) { return _mm512_srli_epi16(a, static_cast<unsigned>(n)); }
    static I slli16(I a, int n) { return _mm512_slli_epi16(a, static_cast<unsigned>(n)); }
    static I slli32_16(I a) { return _mm512_slli_epi32(a, 16); }
    static I dpwssd(I acc, I w, std::int32_t pair) { return _mm512_dpwssd_epi32(acc, w, _mm512_set1_epi32(pair)); }
    static I dot8(I acc, I lo, I hi, const std::int8_t* a) {
        acc = _mm512_dpbusd_epi32(acc, lo, _mm512_set1_epi32(q4k_q5k::load_i32(a)));
        return _mm512_dpbusd_epi32(acc, hi, _mm512_set1_epi32(q4k_q5k::load_i32(a + 4)));
    }
    // IQ4_XS's codes are its values + 128.
    static I table_start(int act_sum) { return _mm512_set1_epi32(-128 * act_sum); }
    static I dot8_table(I acc, I lo, I hi, const std::int8_t* a) { return dot8(acc, lo, hi, a); }
    static F cvt(I a) { return _mm512_cvtepi32_ps(a); }
    static F neg(F a) { return _mm512_sub_ps(_mm512_setzero_ps(), a); }
    static F mul(F a, F b) { return _mm512_mul_ps(a, b); }
    static F fma(F a, F b, F c) { return _mm512_fmadd_ps(a, b, c); }
    static void store(float* y, F v, std::size_t valid) {
        _mm512_mask_storeu_ps(y, static_cast<__mmask16>((1u << valid) - 1), v);
    }
};

} // namespace

// 8 inputs: 8 x 3 accumulators (sums, super-block, output) and the
// decoded codes stay within the 32 zmm.
PackedGemmFn q4k_q5k_avx512_gemm(KFormat format) { return q4k_q5k::gemm_fn<Zmm, 8>(format); }

} // namespace kvscope::kernels::cpu::detail
