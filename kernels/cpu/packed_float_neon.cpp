// F16 and BF16 tile kernels with baseline AArch64 Advanced SIMD
// (packed_float.cpp draws the tile); every NEON path runs them (float math
// has no use for SDOT or SMMLA), and they need no compile flags.
//
// As the AVX2 kernels, a tile is walked twice, rows 0-7 then 8-15, a
// column of 8 rows being two q registers: one FCVTL/FCVTL2 pair (F16) or
// SHLL/SHLL2 by 16 (BF16, the top half of a float) widens it. The walk is
// walk_columns' (packed_float.h) with its FMAs per lane in its order
// (column c into chain c % 2, chains from +0, output chain 0 + chain 1),
// so the outputs are the bits of every x86 kernel; it only reads each
// input's x 4 columns at a time, one load for 4 by-element FMLAs, and its
// loops over inputs carry "#pragma GCC unroll": through walk_columns, or
// with runtime indices, GCC 12 kept the accumulators stored to the stack
// at every column as well as in registers.
#include <arm_neon.h>

#include <algorithm>
#include <cstring>

#include "kernels/cpu/packed_float.h"

namespace kvscope::kernels::cpu::detail {
namespace {

// 4 x 2 chains x 2 registers, 4 inputs' x and two columns: 28 of the 32
// q registers.
constexpr std::size_t kMaxInputs = 4;
constexpr std::size_t kHalfRows = 8;
constexpr std::size_t kHalfBytes = kFloatColumnBytes / 2;
constexpr std::size_t kStep = 4; // columns per load of x

struct F16Column {
    static void load(const std::byte* p, float32x4_t& lo, float32x4_t& hi) {
        const float16x8_t v = vld1q_f16(reinterpret_cast<const float16_t*>(p));
        lo = vcvt_f32_f16(vget_low_f16(v));
        hi = vcvt_high_f32_f16(v);
    }
};

struct Bf16Column {
    static void load(const std::byte* p, float32x4_t& lo, float32x4_t& hi) {
        const uint16x8_t v = vld1q_u16(reinterpret_cast<const std::uint16_t*>(p));
        lo = vreinterpretq_f32_u32(vshll_n_u16(vget_low_u16(v), 16));
        hi = vreinterpretq_f32_u32(vshll_high_n_u16(v, 16));
    }
};

// One chain's 8 rows for N inputs: acc += column x x[j] (lane L of xs[j]).
template <typename Column, std::size_t N, int L>
inline void fma_column(const std::byte* column, const float32x4_t (&xs)[N], float32x4_t (&lo)[N],
                       float32x4_t (&hi)[N]) {
    float32x4_t wlo, whi;
    Column::load(column, wlo, whi);
#pragma GCC unroll 4
    for (std::size_t j = 0; j < N; ++j) {
        lo[j] = vfmaq_laneq_f32(lo[j], wlo, xs[j], L);
        hi[j] = vfmaq_laneq_f32(hi[j], whi, xs[j], L);
    }
}

// The first `rows` of 8 rows' outputs.
void store_rows(float* y, float32x4_t lo, float32x4_t hi, std::size_t rows) {
    float out[kHalfRows];
    vst1q_f32(out, lo);
    vst1q_f32(out + 4, hi);
    std::memcpy(y, out, rows * sizeof(float));
}

template <typename Column>
struct Tile {
    // One 8-row half: `rows` of them are real, its columns start at `half`.
    template <std::size_t N>
    static void half(const std::byte* half, const std::byte* act, std::size_t act_stride, std::size_t cols, float* y,
                     std::size_t y_stride, std::size_t rows) {
        const float* x[N];
        float32x4_t even_lo[N], even_hi[N], odd_lo[N], odd_hi[N];
#pragma GCC unroll 4
        for (std::size_t j = 0; j < N; ++j) {
            x[j] = reinterpret_cast<const float*>(act + j * act_stride);
            even_lo[j] = even_hi[j] = odd_lo[j] = odd_hi[j] = vdupq_n_f32(0.0f);
        }
        std::size_t c = 0;
        for (; c + kStep <= cols; c += kStep) {
            float32x4_t xs[N];
#pragma GCC unroll 4
            for (std::size_t j = 0; j < N; ++j)
                xs[j] = vld1q_f32(x[j] + c);
            const std::byte* column = half + c * kFloatColumnBytes;
            fma_column<Column, N, 0>(column, xs, even_lo, even_hi);
            fma_column<Column, N, 1>(column + kFloatColumnBytes, xs, odd_lo, odd_hi);
            fma_column<Column, N, 2>(column + 2 * kFloatColumnBytes, xs, even_lo, even_hi);
            fma_column<Column, N, 3>(column + 3 * kFloatColumnBytes, xs, odd_lo, odd_hi);
        }
        // The last 1-3 columns: c is even, so they go to chains 0, 1, 0.
        const auto tail = [&](std::size_t column, float32x4_t(&lo)[N], float32x4_t(&hi)[N]) {
            float32x4_t xs[N];
#pragma GCC unroll 4
            for (std::size_t j = 0; j < N; ++j)
                xs[j] = vdupq_n_f32(x[j][column]);
            fma_column<Column, N, 0>(half + column * kFloatColumnBytes, xs, lo, hi);
        };
        if (c < cols)
            tail(c, even_lo, even_hi);
        if (c + 1 < cols)
            tail(c + 1, odd_lo, odd_hi);
        if (c + 2 < cols)
            tail(c + 2, even_lo, even_hi);
#pragma GCC unroll 4
        for (std::size_t j = 0; j < N; ++j)
            store_rows(y + j * y_stride, vaddq_f32(even_lo[j], odd_lo[j]), vaddq_f32(even_hi[j], odd_hi[j]), rows);
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

PackedGemmFn neon_float_packed_gemm(WeightType type) {
    return float_gemm_fn<Tile, F16Column, Bf16Column, kMaxInputs>(type);
}

} // namespace kvscope::kernels::cpu::detail
