// F16 and BF16 tile kernels with baseline AArch64 Advanced SIMD
// (packed_float.cpp draws the tile); every NEON path runs them (float math
// has no use for SDOT or SMMLA), and they need no compile flags.
//
// As the AVX2 kernels: a q register holds 4 rows, so a tile is walked
// twice, rows 0-7 then 8-15, each walk the zmm kernel's walk_columns
// (packed_float.h) with a column of 8 rows in two registers: per lane the
// same FMAs in the same order, so the same bits as every x86 kernel. A
// column's 8 rows widen with one FCVTL/FCVTL2 pair (F16) or SHLL/SHLL2 by
// 16 (BF16, the top half of a float), and each input's x[c] is an FMLA's
// by-element operand.
#include <arm_neon.h>

#include <algorithm>
#include <cstring>

#include "kernels/cpu/packed_float.h"

namespace kvscope::kernels::cpu::detail {
namespace {

// 6 x 2 chains x 2 registers, two columns (4 registers) and an x[c]: 29
// of the 32 q registers.
constexpr std::size_t kMaxInputs = 6;
constexpr std::size_t kHalfRows = 8;
constexpr std::size_t kHalfBytes = kFloatColumnBytes / 2;

// A register pair of 8 rows of a column.
struct Rows8 {
    struct Reg {
        float32x4_t lo, hi;
    };
    static Reg zero() { return {vdupq_n_f32(0.0f), vdupq_n_f32(0.0f)}; }
    static Reg add(Reg a, Reg b) { return {vaddq_f32(a.lo, b.lo), vaddq_f32(a.hi, b.hi)}; }
    static Reg fma(Reg w, float x, Reg acc) { return {vfmaq_n_f32(acc.lo, w.lo, x), vfmaq_n_f32(acc.hi, w.hi, x)}; }
};

struct F16Column : Rows8 {
    static Reg load(const std::byte* p) {
        const float16x8_t v = vld1q_f16(reinterpret_cast<const float16_t*>(p));
        return {vcvt_f32_f16(vget_low_f16(v)), vcvt_high_f32_f16(v)};
    }
};

struct Bf16Column : Rows8 {
    static Reg load(const std::byte* p) {
        const uint16x8_t v = vld1q_u16(reinterpret_cast<const std::uint16_t*>(p));
        return {vreinterpretq_f32_u32(vshll_n_u16(vget_low_u16(v), 16)), vreinterpretq_f32_u32(vshll_high_n_u16(v, 16))};
    }
};

void store_rows(float* y, Rows8::Reg v, std::size_t rows) {
    float out[kHalfRows];
    vst1q_f32(out, v.lo);
    vst1q_f32(out + 4, v.hi);
    std::memcpy(y, out, rows * sizeof(float));
}

template <typename Column>
struct Tile {
    // One 8-row half: `rows` of them are real, its columns start at `half`.
    template <std::size_t N>
    static void half(const std::byte* half, const std::byte* act, std::size_t act_stride, std::size_t cols, float* y,
                     std::size_t y_stride, std::size_t rows) {
        Rows8::Reg sums[N];
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

PackedGemmFn neon_float_packed_gemm(WeightType type) {
    return float_gemm_fn<Tile, F16Column, Bf16Column, kMaxInputs>(type);
}

} // namespace kvscope::kernels::cpu::detail
