// F16 and BF16 tile kernels with AVX-512 (packed_float.cpp draws the
// tile). This file alone is compiled with AVX-512 code generation and runs
// only on CPUs that have it (packed_gemm checks).
//
// A column of the tile is one zmm of 16 rows, decoded once and multiplied
// into every input of the call: one FMA per input with its x[c] broadcast
// from memory (an m32bcst operand, no extra instruction). Up to
// kMaxInputs inputs x 2 chains of accumulators stay in registers for the
// whole row; 16 MACs per FMA. The walk itself is walk_columns
// (packed_float.h), shared with the AVX2 kernel.
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

// A register of the 16 rows of a column.
struct Zmm {
    using Reg = __m512;
    static Reg zero() { return _mm512_setzero_ps(); }
    static Reg add(Reg a, Reg b) { return _mm512_add_ps(a, b); }
    // set1 of a float read from memory: the FMA's m32bcst operand
    static Reg fma(Reg w, float x, Reg acc) { return _mm512_fmadd_ps(w, _mm512_set1_ps(x), acc); }
};

__m256i load256(const std::byte* p) { return _mm256_load_si256(reinterpret_cast<const __m256i*>(p)); }

struct F16Column : Zmm {
    static Reg load(const std::byte* p) { return _mm512_cvtph_ps(load256(p)); }
};

// bfloat16 is the top half of a float.
struct Bf16Column : Zmm {
    static Reg load(const std::byte* p) {
        return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(load256(p)), 16));
    }
};

template <typename Column>
struct Tile {
    template <std::size_t N>
    static void run(const std::byte* tile, const std::byte* act, std::size_t act_stride, std::size_t cols, float* y,
                    std::size_t y_stride, std::size_t rows) {
        __m512 sums[N];
        walk_columns<Column, N>(tile, act, act_stride, cols, sums);
        const auto mask = static_cast<__mmask16>((1u << rows) - 1);
        for (std::size_t j = 0; j < N; ++j)
            _mm512_mask_storeu_ps(y + j * y_stride, mask, sums[j]);
    }
};

} // namespace

PackedGemmFn avx512_float_packed_gemm(WeightType type) {
    return float_gemm_fn<Tile, F16Column, Bf16Column, kMaxInputs>(type);
}

} // namespace kvscope::kernels::cpu::detail
