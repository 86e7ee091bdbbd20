// F16 and BF16 tile kernels with AVX-512 (packed_float.cpp draws the
// tile). This file alone is compiled with AVX-512 code generation and runs
// only on CPUs that have it (packed_gemm checks).
//
// A column of the tile is one zmm of 16 rows, decoded once and multiplied
// into every input of the call: one FMA per input with its x[c] broadcast
// from memory (an m32bcst operand, no extra instruction). Up to
// kMaxInputs inputs x 2 chains of accumulators stay in registers for the
// whole row; 16 MACs per FMA.
// GCC 12's AVX-512 headers trip its own uninitialized-value warnings
// (their _mm512_undefined_* placeholders; GCC bug 105593, fixed in 13).
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ < 13
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>


#include "kernels/cpu/packed_float.h"

namespace kvscope::kernels::cpu::detail {
namespace {

// 24 accumulators and the two columns in flight: 26 of the 32 registers.
constexpr std::size_t kMaxInputs = 12;

struct F16Column {
    static __m512 load(const std::byte* p) {
        return _mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(p)));
    }
};

// bfloat16 is the top half of a float.
struct Bf16Column {
    static __m512 load(const std::byte* p) {
        const __m512i wide = _mm512_cvtepu16_epi32(_mm256_load_si256(reinterpret_cast<const __m256i*>(p)));
        return _mm512_castsi512_ps(_mm512_slli_epi32(wide, 16));
    }
};

// The 16 rows x N inputs of one call; the order of operations per lane is
// the one packed_float.h fixes.
template <typename Column>
struct Tile {
    template <std::size_t N>
    static void run(const std::byte* tile, const std::byte* act, std::size_t act_stride, std::size_t cols, float* y,
                    std::size_t y_stride, std::size_t rows);
};

template <typename Column>
template <std::size_t N>
void Tile<Column>::run(const std::byte* tile, const std::byte* act, std::size_t act_stride, std::size_t cols,
                       float* y, std::size_t y_stride, std::size_t rows) {
    const float* x[N];
    __m512 even[N], odd[N];
    for (std::size_t j = 0; j < N; ++j) {
        x[j] = reinterpret_cast<const float*>(act + j * act_stride);
        even[j] = _mm512_setzero_ps();
        odd[j] = _mm512_setzero_ps();
    }
    std::size_t c = 0;
    for (; c + 2 <= cols; c += 2) {
        const __m512 w0 = Column::load(tile + c * kFloatColumnBytes);
        const __m512 w1 = Column::load(tile + (c + 1) * kFloatColumnBytes);
        for (std::size_t j = 0; j < N; ++j)
            even[j] = _mm512_fmadd_ps(w0, _mm512_set1_ps(x[j][c]), even[j]);
        for (std::size_t j = 0; j < N; ++j)
            odd[j] = _mm512_fmadd_ps(w1, _mm512_set1_ps(x[j][c + 1]), odd[j]);
    }
    if (c < cols) {
        const __m512 w0 = Column::load(tile + c * kFloatColumnBytes);
        for (std::size_t j = 0; j < N; ++j)
            even[j] = _mm512_fmadd_ps(w0, _mm512_set1_ps(x[j][c]), even[j]);
    }
    const auto mask = static_cast<__mmask16>((1u << rows) - 1);
    for (std::size_t j = 0; j < N; ++j)
        _mm512_mask_storeu_ps(y + j * y_stride, mask, _mm512_add_ps(even[j], odd[j]));
}

} // namespace

PackedGemmFn avx512_float_packed_gemm(WeightType type) {
    return float_gemm_fn<Tile, F16Column, Bf16Column, kMaxInputs>(type);
}

} // namespace kvscope::kernels::cpu::detail
