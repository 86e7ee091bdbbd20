// The blocks-of-32 tile kernels (Q8_0, Q4_0, Q5_0, Q4_1, Q5_1, IQ4_NL) with AVX-512 VNNI: the
// 16 rows of a tile in the 16 int32 lanes of a zmm (layout in
// packed_blocks32.cpp). Per block, each of the 8 groups of 4 values is
// decoded once into a register, then each input adds its 4 activation
// codes, broadcast, with one dpbusd; one convert, multiply and FMA per
// block and input apply the scales. Per 16 rows x 32 values and input:
// 8 dpbusd + a broadcast of the offset correction + cvt + mul + fma.
// This file alone is compiled with AVX-512 code generation.
#include "kernels/cpu/avx512_intrinsics.h"

#include <cstring>

#include "kernels/cpu/activation_quant.h"
#include "kernels/cpu/packed_blocks32.h"

namespace kvscope::kernels::cpu::detail::blocks32 {
namespace {

// 2 x 8 accumulators, the group's codes and the scales fit 32 zmm.
constexpr std::size_t kMaxInputs = 8;

struct Zmm {
    using Reg = __m512i;
    static Reg load(const std::byte* p) { return _mm512_loadu_si512(p); }
    static Reg low_nibbles(Reg v) { return _mm512_and_si512(v, _mm512_set1_epi8(0x0F)); }
    static Reg high_nibbles(Reg v) { return low_nibbles(_mm512_srli_epi16(v, 4)); }
    // The 64 bits at p are a byte mask (the layout stores them so): adding
    // 16 sets the nibbles' clear bit 4.
    static Reg add_fifth_bits(Reg nibbles, const std::byte* p) {
        std::uint64_t mask;
        std::memcpy(&mask, p, sizeof mask);
        return _mm512_mask_add_epi8(nibbles, mask, nibbles, _mm512_set1_epi8(0x10));
    }
    static Reg iq4nl_codes(Reg nibbles) {
        return _mm512_shuffle_epi8(_mm512_broadcast_i32x4(iq4nl_table()), nibbles);
    }
};

template <WeightType T, std::size_t N>
void gemm_n(const std::byte* tile, const std::byte* act, std::size_t act_stride, std::size_t cols, float* y,
            std::size_t y_stride, std::size_t rows) {
    const std::size_t blocks = cols / kQuantBlockValues;
    const std::byte* scales = tile + scales_offset(T, cols);
    const std::byte* mins = tile + mins_offset(T, cols);
    const ActBlock32Sum* a[N];
    __m512 acc[N];
    for (std::size_t j = 0; j < N; ++j) {
        a[j] = reinterpret_cast<const ActBlock32Sum*>(act + j * act_stride);
        acc[j] = _mm512_setzero_ps();
    }
    for (std::size_t b = 0; b < blocks; ++b) {
        prefetch_ahead<T>(tile, b);
        __m512i sums[N];
        for (std::size_t j = 0; j < N; ++j)
            sums[j] = _mm512_set1_epi32(-code_offset(T) * a[j][b].sum);
        const std::byte* codes = tile + b * code_bytes(T);
        for_each_group<T, Zmm>(codes, codes + kNibbleBytes, [&](std::size_t g, __m512i w) {
            for (std::size_t j = 0; j < N; ++j) {
                const __m512i x = _mm512_set1_epi32(load_i32(a[j][b].qs + g * kGroupValues));
                sums[j] = _mm512_dpbusd_epi32(sums[j], w, x);
            }
        });
        const __m512 dw = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(scales + b * kScaleBytes)));
        for (std::size_t j = 0; j < N; ++j)
            acc[j] = _mm512_fmadd_ps(_mm512_mul_ps(dw, _mm512_set1_ps(a[j][b].d)), _mm512_cvtepi32_ps(sums[j]), acc[j]);
        if constexpr (has_min(T)) {
            const __m512 m = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(mins + b * kScaleBytes)));
            for (std::size_t j = 0; j < N; ++j)
                acc[j] = _mm512_fmadd_ps(m, _mm512_set1_ps(a[j][b].s), acc[j]);
        }
    }
    const auto mask = static_cast<__mmask16>((1u << rows) - 1);
    for (std::size_t j = 0; j < N; ++j)
        _mm512_mask_storeu_ps(y + j * y_stride, mask, acc[j]);
}

template <WeightType T>
void gemm(const std::byte* tile, const std::byte* act, std::size_t act_stride, std::size_t count, std::size_t cols,
          float* y, std::size_t y_stride, std::size_t rows) {
    static_assert(kMaxInputs == 8);
    switch (count) {
    case 8: return gemm_n<T, 8>(tile, act, act_stride, cols, y, y_stride, rows);
    case 7: return gemm_n<T, 7>(tile, act, act_stride, cols, y, y_stride, rows);
    case 6: return gemm_n<T, 6>(tile, act, act_stride, cols, y, y_stride, rows);
    case 5: return gemm_n<T, 5>(tile, act, act_stride, cols, y, y_stride, rows);
    case 4: return gemm_n<T, 4>(tile, act, act_stride, cols, y, y_stride, rows);
    case 3: return gemm_n<T, 3>(tile, act, act_stride, cols, y, y_stride, rows);
    case 2: return gemm_n<T, 2>(tile, act, act_stride, cols, y, y_stride, rows);
    default: return gemm_n<T, 1>(tile, act, act_stride, cols, y, y_stride, rows);
    }
}

} // namespace

PackedGemmFn avx512_packed_gemm(WeightType type) {
    switch (type) {
    case WeightType::Q8_0: return {gemm<WeightType::Q8_0>, kMaxInputs};
    case WeightType::Q4_0: return {gemm<WeightType::Q4_0>, kMaxInputs};
    case WeightType::Q5_0: return {gemm<WeightType::Q5_0>, kMaxInputs};
    case WeightType::Q4_1: return {gemm<WeightType::Q4_1>, kMaxInputs};
    case WeightType::Q5_1: return {gemm<WeightType::Q5_1>, kMaxInputs};
    case WeightType::IQ4_NL: return {gemm<WeightType::IQ4_NL>, kMaxInputs};
    default: return {};
    }
}

} // namespace kvscope::kernels::cpu::detail::blocks32
