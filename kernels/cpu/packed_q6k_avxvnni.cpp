// The Q6_K tile kernel with AVX-VNNI (VEX 256-bit dpbusd): the AVX-512
// kernel's steps on each 8-row half of the tile in turn (packed_q6k.cpp
// draws the tile): per sub-block of 16 columns and input, 4 dpbusd from
// the input's -32 * bsums, one vpmulld by the 8 rows' scales and one add.
// The integer total of a super-block is exact; its float steps are those
// of packed_q6k.h. This file alone is compiled with AVX-VNNI code
// generation.
#include <immintrin.h>

#include "kernels/cpu/activation_quant.h"
#include "kernels/cpu/packed_q6k.h"

namespace kvscope::kernels::cpu::detail {
namespace {

template <std::size_t N>
void add_super(const std::uint8_t* super, std::size_t half, const ActBlock256* const (&a)[N], __m256i (&total)[N]) {
    alignas(64) std::int32_t offset[N][16];
    q6k_offsets(a, offset);
    for (std::size_t i = 0; i < N; ++i)
        total[i] = _mm256_setzero_si256();
    for (std::size_t s = 0; s < 16; ++s) {
        q6k_prefetch(super + kQ6kCodes + s * kQ6kSubBytes);
        const Q6kCodes256 c = q6k_decode256(super + kQ6kCodes + s * kQ6kSubBytes, half);
        const __m256i sc = _mm256_cvtepi8_epi32(
            _mm_loadl_epi64(reinterpret_cast<const __m128i*>(super + kQ6kScales + 16 * s + 8 * half)));
        for (std::size_t i = 0; i < N; ++i) {
            const std::int8_t* q = a[i]->qs + 16 * s;
            __m256i sum = _mm256_set1_epi32(offset[i][s]);
            for (std::size_t k = 0; k < 4; ++k)
                sum = _mm256_dpbusd_avx_epi32(sum, c.w[k], q6k_broadcast4(q + 4 * k));
            total[i] = _mm256_add_epi32(total[i], _mm256_mullo_epi32(sum, sc));
        }
    }
}

} // namespace

void q6k_gemm_avxvnni(const std::byte* tile, const std::byte* act, std::size_t act_stride, std::size_t count,
                      std::size_t cols, float* y, std::size_t y_stride, std::size_t rows) {
    q6k_with_count<kQ6kMaxInputs256>(count, [&](auto n) {
        q6k_gemm256<n()>(tile, act, act_stride, cols, y, y_stride, rows, add_super<n()>);
    });
}

} // namespace kvscope::kernels::cpu::detail
