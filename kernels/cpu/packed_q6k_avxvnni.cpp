// The Q6_K tile kernel with AVX-VNNI (VEX 256-bit dpbusd): the AVX-512
// kernel's steps on each 8-row half of the tile in turn (packed_q6k.cpp
// draws the tile): per sub-block of 16 columns and input, 4 dpbusd from
// the input's -32 * bsums, one vpmulld by the 8 rows' scales and one add.
// The integer total of a super-block is exact; its float steps are those
// of packed_q6k.h. This file alone is compiled with AVX-VNNI code
// generation.
#include <immintrin.h>

#include <algorithm>

#include "kernels/cpu/activation_quant.h"
#include "kernels/cpu/packed_q6k.h"

namespace kvscope::kernels::cpu::detail {
namespace {

template <std::size_t N>
void gemm_half(const std::byte* tile, const std::byte* act, std::size_t act_stride, std::size_t cols, float* y,
               std::size_t y_stride, std::size_t half, std::size_t rows) {
    __m256 acc[N];
    for (std::size_t i = 0; i < N; ++i)
        acc[i] = _mm256_setzero_ps();
    for (std::size_t b = 0; b < cols / kActSuperValues; ++b) {
        const auto* super = reinterpret_cast<const std::uint8_t*>(tile) + b * kQ6kSuperBytes;
        const ActBlock256* a[N];
        alignas(32) std::int32_t offset[N][16]; // -32 * bsums, the start of each sub-block's sum
        __m256i total[N];
        for (std::size_t i = 0; i < N; ++i) {
            a[i] = reinterpret_cast<const ActBlock256*>(act + i * act_stride) + b;
            for (std::size_t s = 0; s < 16; ++s)
                offset[i][s] = -32 * a[i]->bsums[s];
            total[i] = _mm256_setzero_si256();
        }
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
        const __m256 d = _mm256_load_ps(reinterpret_cast<const float*>(super + kQ6kD) + 8 * half);
        for (std::size_t i = 0; i < N; ++i)
            acc[i] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(total[i]), _mm256_mul_ps(d, _mm256_set1_ps(a[i]->d)), acc[i]);
    }
    for (std::size_t i = 0; i < N; ++i)
        q6k_store_rows(y + i * y_stride + 8 * half, acc[i], rows);
}

template <std::size_t N>
void gemm(const std::byte* tile, const std::byte* act, std::size_t act_stride, std::size_t cols, float* y,
          std::size_t y_stride, std::size_t rows) {
    for (std::size_t half = 0; 8 * half < rows; ++half)
        gemm_half<N>(tile, act, act_stride, cols, y, y_stride, half, std::min<std::size_t>(8, rows - 8 * half));
}

} // namespace

void q6k_gemm_avxvnni(const std::byte* tile, const std::byte* act, std::size_t act_stride, std::size_t count,
                      std::size_t cols, float* y, std::size_t y_stride, std::size_t rows) {
    static_assert(kQ6kMaxInputs256 == 4);
    switch (count) {
    case 1: return gemm<1>(tile, act, act_stride, cols, y, y_stride, rows);
    case 2: return gemm<2>(tile, act, act_stride, cols, y, y_stride, rows);
    case 3: return gemm<3>(tile, act, act_stride, cols, y, y_stride, rows);
    default: return gemm<4>(tile, act, act_stride, cols, y, y_stride, rows);
    }
}

} // namespace kvscope::kernels::cpu::detail
