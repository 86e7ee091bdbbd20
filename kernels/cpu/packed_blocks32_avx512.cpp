// The blocks-of-32 tile kernels (Q8_0, Q4_0, Q5_0, Q4_1, Q5_1, IQ4_NL,
// MXFP4) with AVX-512 VNNI: the
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
    template <WeightType T>
    static Reg table_codes(Reg nibbles) {
        return _mm512_shuffle_epi8(_mm512_broadcast_i32x4(code_table<T>()), nibbles);
    }
    static Reg set32(std::int32_t v) { return _mm512_set1_epi32(v); }
    static Reg shl32(Reg v, int bits) { return _mm512_slli_epi32(v, static_cast<unsigned>(bits)); }
    static Reg shlv32(Reg v, Reg bits) { return _mm512_sllv_epi32(v, bits); }
    static Reg sub32(Reg a, Reg b) { return _mm512_sub_epi32(a, b); }
    static Reg min_u32(Reg a, Reg b) { return _mm512_min_epu32(a, b); }
    static Reg max_i32(Reg a, Reg b) { return _mm512_max_epi32(a, b); }
};

// The 16 rows' block scales at p as floats: f16 d, or MXFP4's E8M0 e.
template <WeightType T>
__m512 zmm_scales(const std::byte* p) {
    if constexpr (T == WeightType::MXFP4) {
        const __m512i e = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
        return _mm512_castsi512_ps(e8m0_half_bits<Zmm>(e));
    } else {
        return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
    }
}

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
        const __m512 dw = zmm_scales<T>(scales + b * scale_bytes(T));
        for (std::size_t j = 0; j < N; ++j)
            acc[j] = _mm512_fmadd_ps(_mm512_mul_ps(dw, _mm512_set1_ps(a[j][b].d)), _mm512_cvtepi32_ps(sums[j]), acc[j]);
        if constexpr (has_min(T)) {
            const __m512 m = zmm_scales<T>(mins + b * scale_bytes(T));
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
    case WeightType::MXFP4: return {gemm<WeightType::MXFP4>, kMaxInputs};
    default: return {};
    }
}

} // namespace kvscope::kernels::cpu::detail::blocks32
