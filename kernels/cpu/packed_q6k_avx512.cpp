// The Q6_K tile kernel with AVX-512 VNNI: a zmm holds 4 codes of each of
// the tile's 16 rows (packed_q6k.cpp draws the tile). Per sub-block of 16
// columns the 4 code vectors are decoded once (11 ALU ops), then each input
// costs 4 dpbusd (starting from its -32 * bsums), one vpmulld by the 16
// rows' scales and one add: 6 arithmetic instructions per 16 columns, 12
// per 32, plus the broadcasts of its codes, which GCC 12 loads with
// vpbroadcastd rather than folding into dpbusd (forcing the folded form
// with asm measured 5% slower). Combining sub-block pairs does not pay:
// a sub-block's sum needs 18 bits, too many for pmaddwd's 16. The integer
// total of a super-block is exact; its float steps are those of
// packed_q6k.h.
// This file alone is compiled with AVX-512 code generation.
#include "kernels/cpu/avx512_intrinsics.h"

#include <cstdint>
#include <cstring>

#include "kernels/cpu/activation_quant.h"
#include "kernels/cpu/packed_q6k.h"

namespace kvscope::kernels::cpu::detail {
namespace {

struct Codes {
    __m512i w[4]; // column groups k = 0..3 of one sub-block
};

// select(mask, a, b): bits of a where the mask has ones, else bits of b.
constexpr int kSelect = 0xCA;

Codes decode(const std::uint8_t* sub) {
    const __m512i nibble = _mm512_set1_epi8(0x0F), pairs = _mm512_set1_epi8(0x33);
    const __m512i l0 = _mm512_load_si512(sub), l1 = _mm512_load_si512(sub + kQ6kL1);
    const __m512i h = _mm512_load_si512(sub + kQ6kH);
    const __m512i h02 = _mm512_and_si512(h, pairs);                        // k = 0 at 4-5, k = 2 at 0-1
    const __m512i h13 = _mm512_and_si512(_mm512_srli_epi16(h, 2), pairs); // k = 1 at 4-5, k = 3 at 0-1
    return {{_mm512_ternarylogic_epi32(nibble, l0, h02, kSelect),
             _mm512_ternarylogic_epi32(nibble, _mm512_srli_epi16(l0, 4), h13, kSelect),
             _mm512_ternarylogic_epi32(nibble, l1, _mm512_slli_epi16(h02, 4), kSelect),
             _mm512_ternarylogic_epi32(nibble, _mm512_srli_epi16(l1, 4), _mm512_slli_epi16(h13, 4), kSelect)}};
}

__m512i broadcast4(const std::int8_t* q) {
    std::int32_t v;
    std::memcpy(&v, q, sizeof v);
    return _mm512_set1_epi32(v);
}

template <std::size_t N>
void gemm(const std::byte* tile, const std::byte* act, std::size_t act_stride, std::size_t cols, float* y,
          std::size_t y_stride, std::size_t rows) {
    __m512 acc[N];
    for (std::size_t i = 0; i < N; ++i)
        acc[i] = _mm512_setzero_ps();
    for (std::size_t b = 0; b < cols / kActSuperValues; ++b) {
        const auto* super = reinterpret_cast<const std::uint8_t*>(tile) + b * kQ6kSuperBytes;
        const ActBlock256* a[N];
        q6k_inputs_at(act, act_stride, b, a);
        alignas(64) std::int32_t offset[N][16];
        q6k_offsets(a, offset);
        __m512i total[N];
        for (std::size_t i = 0; i < N; ++i)
            total[i] = _mm512_setzero_si512();
        for (std::size_t s = 0; s < 16; ++s) {
            q6k_prefetch(super + kQ6kCodes + s * kQ6kSubBytes);
            const Codes c = decode(super + kQ6kCodes + s * kQ6kSubBytes);
            const __m512i sc =
                _mm512_cvtepi8_epi32(_mm_load_si128(reinterpret_cast<const __m128i*>(super + kQ6kScales + 16 * s)));
            for (std::size_t i = 0; i < N; ++i) {
                const std::int8_t* q = a[i]->qs + 16 * s;
                __m512i sum = _mm512_set1_epi32(offset[i][s]);
                for (std::size_t k = 0; k < 4; ++k)
                    sum = _mm512_dpbusd_epi32(sum, c.w[k], broadcast4(q + 4 * k));
                total[i] = _mm512_add_epi32(total[i], _mm512_mullo_epi32(sum, sc));
            }
        }
        const __m512 d = _mm512_load_ps(super + kQ6kD);
        for (std::size_t i = 0; i < N; ++i)
            acc[i] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(total[i]), _mm512_mul_ps(d, _mm512_set1_ps(a[i]->d)), acc[i]);
    }
    const __mmask16 keep = static_cast<__mmask16>((1u << rows) - 1);
    for (std::size_t i = 0; i < N; ++i)
        _mm512_mask_storeu_ps(y + i * y_stride, keep, acc[i]);
}

} // namespace

void q6k_gemm_avx512(const std::byte* tile, const std::byte* act, std::size_t act_stride, std::size_t count,
                     std::size_t cols, float* y, std::size_t y_stride, std::size_t rows) {
    q6k_with_count<kQ6kMaxInputs512>(count,
                                     [&](auto n) { gemm<n()>(tile, act, act_stride, cols, y, y_stride, rows); });
}

} // namespace kvscope::kernels::cpu::detail
