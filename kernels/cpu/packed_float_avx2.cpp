// F16 and BF16 tile kernels with AVX2 + FMA + F16C (packed_float.cpp draws
// the tile). This file alone is compiled with those flags; the AVX-VNNI
// instruction set runs these kernels too (float math has no use for VNNI).
//
// 16 ymm registers hold 8 rows, so a tile is walked twice, rows 0-7 then
// 8-15 (the other half's bytes of a column are skipped; the tile stays in
// cache between the walks). Each walk is the zmm kernel's walk_columns
// (packed_float.h): per lane the same operations, so the same bits.
#include <immintrin.h>

#include <algorithm>

#include "kernels/cpu/packed_float.h"

namespace kvscope::kernels::cpu::detail {
namespace {

// 12 accumulators, two columns and a broadcast: every ymm register but one
// (VEX has no broadcast operand, so each x[c] takes a register).
constexpr std::size_t kMaxInputs = 6;
constexpr std::size_t kHalfRows = 8;
constexpr std::size_t kHalfBytes = kFloatColumnBytes / 2;

// A register of 8 rows of a column.
struct Ymm {
    using Reg = __m256;
    static Reg zero() { return _mm256_setzero_ps(); }
    static Reg add(Reg a, Reg b) { return _mm256_add_ps(a, b); }
    // set1, not _mm256_broadcast_ss: GCC 12 takes that builtin's pointer
    // for a read of any memory and keeps the accumulators stored on the
    // stack at every step.
    static Reg fma(Reg w, float x, Reg acc) { return _mm256_fmadd_ps(w, _mm256_set1_ps(x), acc); }
};

__m128i load128(const std::byte* p) { return _mm_load_si128(reinterpret_cast<const __m128i*>(p)); }

struct F16Column : Ymm {
    static Reg load(const std::byte* p) { return _mm256_cvtph_ps(load128(p)); }
};

// bfloat16 is the top half of a float.
struct Bf16Column : Ymm {
    static Reg load(const std::byte* p) {
        return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(load128(p)), 16));
    }
};

void store_rows(float* y, __m256 v, std::size_t rows) {
    if (rows == kHalfRows)
        return _mm256_storeu_ps(y, v);
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    const __m256i mask = _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(rows)), lane);
    _mm256_maskstore_ps(y, mask, v);
}

template <typename Column>
struct Tile {
    // One 8-row half: `rows` of them are real, its columns start at `half`.
    template <std::size_t N>
    static void half(const std::byte* half, const std::byte* act, std::size_t act_stride, std::size_t cols, float* y,
                     std::size_t y_stride, std::size_t rows) {
        __m256 sums[N];
        walk_columns<Column, N>(half, act, act_stride, cols, sums);
        for (std::size_t j = 0; j < N; ++j)
            store_rows(y + j * y_stride, sums[j], rows);
    }

    template <std::size_t N>
    static void run(const std::byte* tile, const std::byte* act, std::size_t act_stride, std::size_t cols, float* y,
                    std::size_t y_stride, std::size_t rows) {
        half<N>(tile, act, act_stride, cols, y, y_stride, std::min(rows, kHalfRows));
        if (rows > kHalfRows)
            half<N>(tile + kHalfBytes, act, act_stride, cols, y + kHalfRows, y_stride, rows - kHalfRows);
    }
};

} // namespace

PackedGemmFn avx2_float_packed_gemm(WeightType type) {
    return float_gemm_fn<Tile, F16Column, Bf16Column, kMaxInputs>(type);
}

} // namespace kvscope::kernels::cpu::detail
