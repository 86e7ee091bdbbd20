// The blocks-of-32 tile kernels (Q8_0, Q4_0, Q5_0, Q4_1, Q5_1, IQ4_NL,
// MXFP4) with Armv8.6 I8MM's USMMLA: one instruction multiplies a 2 x 8
// matrix of unsigned weight codes (2 rows, 8 consecutive values) by the
// 8 x 2 signed codes of two inputs into a 2 x 2 block of int32 sums, 32
// multiply-adds where SDOT does 16. The codes are the tile's stored ones
// with their offsets, as dpbusd takes them (packed_blocks32.cpp).
//
// From the layout's groups: groups g and g + 1 of 4 rows (two registers,
// row r's 4 codes in int32 lane r) zip on the .4s lanes into rows 0-1 and
// rows 2-3, each row's 8 codes consecutive: ZIP1/ZIP2 give the 2 x 8
// operands. Two inputs' codes of the same groups are one ZIP of 64-bit
// lanes. The sums of a pair of rows come out as [row r input j, row r
// input j', row r + 1 input j, row r + 1 input j'], and the float step
// keeps that order (scales zipped the same way, per lane the x86
// kernels' operations), unzipped once at the end of the tile.
//
// Half the multiply-add instructions of SDOT (16 per 16 rows x 32 values
// x input against 32), but not fewer instructions: each weight operand
// takes a ZIP (shared by the call's inputs, 4 here), each input pair its
// code operands' ZIPs and its scales' lanes, so at 4 inputs a block costs
// about what the SDOT kernel's does (objdump, GCC 12, per 16 rows x 32
// values x input: Q8_0 76 both, Q4_0 80 / 79, Q5_0 144 / 136, MXFP4 102 /
// 95). Faster only where the multiply-adds are the bottleneck.
// This file alone is compiled with +i8mm; packed_gemm calls it only on
// CPUs that report it.
#include "kernels/cpu/packed_blocks32.h"

namespace kvscope::kernels::cpu::detail::blocks32 {
namespace {

// Pairs of inputs; 2 pairs x (4 float + 2 int32 accumulators + 4 code
// operands) + the decoded quads fit 32 q registers.
constexpr std::size_t kMaxPairs = 2;
constexpr std::size_t kMaxInputs = 2 * kMaxPairs;
constexpr bool kUnsigned = true;

// Loops over pairs, quads and row pairs carry "#pragma GCC unroll" for
// the reason packed_blocks32.h gives.

// Two inputs' rows: an odd count pairs the last input with itself.
struct InputPair {
    const ActBlock32Sum* a;
    const ActBlock32Sum* b;
};

// [v0, v1, v0, v1]: the order of a pair's lanes.
inline float32x4_t pair_lanes(float v0, float v1) { return vzip1q_f32(vdupq_n_f32(v0), vdupq_n_f32(v1)); }
inline int32x4_t pair_lanes(std::int32_t v0, std::int32_t v1) {
    return vzip1q_s32(vdupq_n_s32(v0), vdupq_n_s32(v1));
}

// Row pair p (rows 2 p, 2 p + 1 of a quad: p = 0, 1) of 4 rows' values,
// each doubled: the rows' factor in a pair's lanes.
inline float32x4_t row_pair_lanes(float32x4_t quad, std::size_t p) {
    return p == 0 ? vzip1q_f32(quad, quad) : vzip2q_f32(quad, quad);
}

// [rows 0-1] (r = 0) or [rows 2-3] (r = 1) of two groups' quads g0, g1:
// each row's 4 codes of g0 then its 4 of g1.
inline uint8x16_t zip_rows(uint8x16_t g0, uint8x16_t g1, std::size_t r) {
    const uint32x4_t a = vreinterpretq_u32_u8(g0), b = vreinterpretq_u32_u8(g1);
    return vreinterpretq_u8_u32(r == 0 ? vzip1q_u32(a, b) : vzip2q_u32(a, b));
}

// The USMMLA operands of quad i for groups k, k + 1 (lo) and k + 4, k + 5
// (hi), k even, row pair r = 0, 1. Decoding is bytewise, so it commutes
// with the zip: Q4_0's line bytes are zipped first and split after (a line
// holds both groups), saving a zip per operand; only the fifth bits, one
// mask per group, go in before the zip.
struct Operands {
    uint8x16_t lo[2], hi[2];
};

template <WeightType T>
inline Operands operands(const std::byte* codes, const std::byte* fifth, std::size_t k, std::size_t i) {
    Operands w;
    if constexpr (T == WeightType::Q8_0) {
        const uint8x16_t g0 = load_quad(codes, k, i), g1 = load_quad(codes, k + 1, i);
        const uint8x16_t g4 = load_quad(codes, k + kGroups / 2, i), g5 = load_quad(codes, k + 1 + kGroups / 2, i);
#pragma GCC unroll 2
        for (std::size_t r = 0; r < 2; ++r) {
            w.lo[r] = zip_rows(g0, g1, r);
            w.hi[r] = zip_rows(g4, g5, r);
        }
    } else if constexpr (has_fifth_bit(T)) {
        uint8x16_t lo0, hi0, lo1, hi1;
        decode_quad<T, kUnsigned>(codes, fifth, k, i, lo0, hi0);
        decode_quad<T, kUnsigned>(codes, fifth, k + 1, i, lo1, hi1);
#pragma GCC unroll 2
        for (std::size_t r = 0; r < 2; ++r) {
            w.lo[r] = zip_rows(lo0, lo1, r);
            w.hi[r] = zip_rows(hi0, hi1, r);
        }
    } else {
        const uint8x16_t v0 = load_quad(codes, k, i), v1 = load_quad(codes, k + 1, i);
#pragma GCC unroll 2
        for (std::size_t r = 0; r < 2; ++r) {
            split_nibbles(zip_rows(v0, v1, r), w.lo[r], w.hi[r]);
            if constexpr (is_table(T)) {
                w.lo[r] = table_codes<T, kUnsigned>(w.lo[r]);
                w.hi[r] = table_codes<T, kUnsigned>(w.hi[r]);
            }
        }
    }
    return w;
}

template <WeightType T, std::size_t N>
void i8mm_gemm_half(const std::byte* tile, const std::byte* act, std::size_t act_stride, std::size_t cols,
                    std::size_t h, float* y, std::size_t y_stride, std::size_t rows) {
    constexpr std::size_t P = (N + 1) / 2;
    const std::size_t blocks = cols / kQuantBlockValues;
    const std::byte* scales = tile + scales_offset(T, cols) + h * kNeonHalfRows * scale_size(T);
    const std::byte* mins = tile + mins_offset(T, cols) + h * kNeonHalfRows * scale_size(T);
    InputPair in[P];
    // acc[p][i][r]: quad i's row pair r (rows 4 i + 2 r, + 1) with pair p.
    float32x4_t acc[P][kQuads][2];
#pragma GCC unroll 4
    for (std::size_t p = 0; p < P; ++p) {
        const std::size_t second = 2 * p + 1 < N ? 2 * p + 1 : 2 * p;
        in[p] = {reinterpret_cast<const ActBlock32Sum*>(act + 2 * p * act_stride),
                 reinterpret_cast<const ActBlock32Sum*>(act + second * act_stride)};
#pragma GCC unroll 2
        for (std::size_t i = 0; i < kQuads; ++i)
            acc[p][i][0] = acc[p][i][1] = vdupq_n_f32(0.0f);
    }
    for (std::size_t b = 0; b < blocks; ++b) {
        if (h == 0) // the second half finds the tile in cache
            prefetch_ahead<T>(tile, b);
        int32x4_t init[P];
        int8x16_t x[P][kGroups / 2]; // groups 2 k, 2 k + 1 of both inputs
        float32x4_t dx[P], sx[P];
#pragma GCC unroll 4
        for (std::size_t p = 0; p < P; ++p) {
            const ActBlock32Sum &u = in[p].a[b], &v = in[p].b[b];
            init[p] = pair_lanes(-code_offset(T) * u.sum, -code_offset(T) * v.sum);
            dx[p] = pair_lanes(u.d, v.d);
            if constexpr (has_min(T))
                sx[p] = pair_lanes(u.s, v.s);
#pragma GCC unroll 4
            for (std::size_t half = 0; half < 2; ++half) {
                const int64x2_t xu = vreinterpretq_s64_s8(vld1q_s8(u.qs + 16 * half));
                const int64x2_t xv = vreinterpretq_s64_s8(vld1q_s8(v.qs + 16 * half));
                x[p][2 * half] = vreinterpretq_s8_s64(vzip1q_s64(xu, xv));
                x[p][2 * half + 1] = vreinterpretq_s8_s64(vzip2q_s64(xu, xv));
            }
        }
        const std::byte* block = tile + b * code_bytes(T);
        const std::byte* codes = block + h * kNeonHalfBytes;
        const std::byte* fifth = block + kNibbleBytes + h * sizeof(std::uint32_t);
        float32x4_t dw[kQuads], m[kQuads];
        half_scales<T>(scales + b * scale_bytes(T), dw);
        if constexpr (has_min(T))
            half_scales<T>(mins + b * scale_bytes(T), m);
        // A quad at a time (only its sums live): sums[p][r] for row pair r.
#pragma GCC unroll 4
        for (std::size_t i = 0; i < kQuads; ++i) {
            int32x4_t sums[P][2];
#pragma GCC unroll 4
            for (std::size_t p = 0; p < P; ++p)
                sums[p][0] = sums[p][1] = init[p];
#pragma GCC unroll 2
            for (std::size_t k = 0; k < kGroups / 2; k += 2) {
                const Operands w = operands<T>(codes, fifth, k, i);
#pragma GCC unroll 4
                for (std::size_t r = 0; r < 2; ++r)
#pragma GCC unroll 4
                    for (std::size_t p = 0; p < P; ++p) {
                        sums[p][r] = vusmmlaq_s32(sums[p][r], w.lo[r], x[p][k / 2]);
                        sums[p][r] = vusmmlaq_s32(sums[p][r], w.hi[r], x[p][2 + k / 2]);
                    }
            }
#pragma GCC unroll 4
            for (std::size_t p = 0; p < P; ++p)
#pragma GCC unroll 4
                for (std::size_t r = 0; r < 2; ++r) {
                    acc[p][i][r] = vfmaq_f32(acc[p][i][r], vmulq_f32(row_pair_lanes(dw[i], r), dx[p]),
                                             vcvtq_f32_s32(sums[p][r]));
                    if constexpr (has_min(T))
                        acc[p][i][r] = vfmaq_f32(acc[p][i][r], row_pair_lanes(m[i], r), sx[p]);
                }
        }
    }
    const std::size_t first = h * kNeonHalfRows, count = rows - first < kNeonHalfRows ? rows - first : kNeonHalfRows;
#pragma GCC unroll 4
    for (std::size_t p = 0; p < P; ++p) {
        float32x4_t out0[kQuads], out1[kQuads];
#pragma GCC unroll 4
        for (std::size_t i = 0; i < kQuads; ++i) {
            out0[i] = vuzp1q_f32(acc[p][i][0], acc[p][i][1]);
            out1[i] = vuzp2q_f32(acc[p][i][0], acc[p][i][1]);
        }
        store_half(y + 2 * p * y_stride + first, out0, count);
        if (2 * p + 1 < N)
            store_half(y + (2 * p + 1) * y_stride + first, out1, count);
    }
}

// One input (a decode step) goes to the SDOT kernel: USMMLA would pair
// it with itself and throw half its sums away, and the SDOT tile does the
// same sums in fewer instructions (per 16 rows x 32 values, qemu's count:
// Q4_0 120 against 172, Q8_0 128 against 168). Every instruction set
// gives the same bits, so which one ran does not show in the outputs.
template <WeightType T>
struct I8mmHalf {
    template <std::size_t N>
    static void run(const std::byte* tile, const std::byte* act, std::size_t act_stride, std::size_t cols,
                    std::size_t h, float* y, std::size_t y_stride, std::size_t rows) {
        if constexpr (N == 1)
            lanes_gemm_half<SdotDot, T, 1>(tile, act, act_stride, cols, h, y, y_stride, rows);
        else
            i8mm_gemm_half<T, N>(tile, act, act_stride, cols, h, y, y_stride, rows);
    }
};

} // namespace

PackedGemmFn i8mm_packed_gemm(WeightType type) { return neon_packed_gemm_of<I8mmHalf, kMaxInputs>(type); }

} // namespace kvscope::kernels::cpu::detail::blocks32
