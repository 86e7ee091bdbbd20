// The Q6_K tile kernel with AVX2 (no dpbusd), on each 8-row half of the
// tile in turn (packed_q6k.cpp draws the tile). maddubs multiplies codes
// (0..63) by activation codes into pairs of at most 2 * 63 * 127, so two
// of them add in int16 without saturating, and pmaddwd by the sub-block's
// scale (repeated in both words of a lane) widens them already scaled:
// per sub-block of 16 columns and input, 4 maddubs, 2 adds, 2 pmaddwd and
// 2 adds; the -32 * bsums term costs one pmaddwd and add per two
// sub-blocks. The integer total of a super-block is exact (the same as
// the VNNI kernels'); its float steps are those of packed_q6k.h. This file
// alone is compiled with AVX2 code generation.
#include <immintrin.h>

#include "kernels/cpu/activation_quant.h"
#include "kernels/cpu/packed_q6k.h"

namespace kvscope::kernels::cpu::detail {
namespace {

// The 8 rows' scales of sub-block s, sign-extended, each in both words of
// its lane.
__m256i scale_words(const std::uint8_t* super, std::size_t s, std::size_t half) {
    const __m256i sc = _mm256_cvtepi8_epi32(
        _mm_loadl_epi64(reinterpret_cast<const __m128i*>(super + kQ6kScales + 16 * s + 8 * half)));
    const __m256i low_word_twice = _mm256_setr_epi8(0, 1, 0, 1, 4, 5, 4, 5, 8, 9, 8, 9, 12, 13, 12, 13, //
                                                    0, 1, 0, 1, 4, 5, 4, 5, 8, 9, 8, 9, 12, 13, 12, 13);
    return _mm256_shuffle_epi8(sc, low_word_twice);
}

// q . a over one sub-block's 16 columns, times the scale, added to total.
__m256i add_scaled(__m256i total, const Q6kCodes256& c, const std::int8_t* q, __m256i scale) {
    const __m256i x01 = _mm256_add_epi16(_mm256_maddubs_epi16(c.w[0], q6k_broadcast4(q)),
                                         _mm256_maddubs_epi16(c.w[1], q6k_broadcast4(q + 4)));
    const __m256i x23 = _mm256_add_epi16(_mm256_maddubs_epi16(c.w[2], q6k_broadcast4(q + 8)),
                                         _mm256_maddubs_epi16(c.w[3], q6k_broadcast4(q + 12)));
    return _mm256_add_epi32(_mm256_add_epi32(total, _mm256_madd_epi16(x01, scale)), _mm256_madd_epi16(x23, scale));
}

template <std::size_t N>
void add_super(const std::uint8_t* super, std::size_t half, const ActBlock256* const (&a)[N], __m256i (&total)[N]) {
    for (std::size_t i = 0; i < N; ++i)
        total[i] = _mm256_setzero_si256();
    for (std::size_t s = 0; s < 16; s += 2) {
        q6k_prefetch(super + kQ6kCodes + s * kQ6kSubBytes);
        q6k_prefetch(super + kQ6kCodes + (s + 1) * kQ6kSubBytes);
        const __m256i even = scale_words(super, s, half), odd = scale_words(super, s + 1, half);
        // Words (-32 sc[s], -32 sc[s + 1]) against the input's (bsums[s], bsums[s + 1]).
        const __m256i offset = _mm256_mullo_epi16(_mm256_blend_epi16(even, odd, 0xAA), _mm256_set1_epi16(-32));
        const Q6kCodes256 c0 = q6k_decode256(super + kQ6kCodes + s * kQ6kSubBytes, half);
        const Q6kCodes256 c1 = q6k_decode256(super + kQ6kCodes + (s + 1) * kQ6kSubBytes, half);
        for (std::size_t i = 0; i < N; ++i) {
            std::int32_t bsums;
            std::memcpy(&bsums, a[i]->bsums + s, sizeof bsums);
            total[i] = _mm256_add_epi32(total[i], _mm256_madd_epi16(offset, _mm256_set1_epi32(bsums)));
            total[i] = add_scaled(total[i], c0, a[i]->qs + 16 * s, even);
            total[i] = add_scaled(total[i], c1, a[i]->qs + 16 * (s + 1), odd);
        }
    }
}

} // namespace

void q6k_gemm_avx2(const std::byte* tile, const std::byte* act, std::size_t act_stride, std::size_t count,
                   std::size_t cols, float* y, std::size_t y_stride, std::size_t rows) {
    q6k_with_count<kQ6kMaxInputs256>(count, [&](auto n) {
        q6k_gemm256<n()>(tile, act, act_stride, cols, y, y_stride, rows, add_super<n()>);
    });
}

} // namespace kvscope::kernels::cpu::detail
