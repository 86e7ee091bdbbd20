// Internal to the Q2_K/Q3_K tile kernels (packed_q2k_q3k*.cpp): the tile
// layout, shared by pack_tile and every kernel, and the one tile walk the
// three instruction sets instantiate with their vector types (the ymm and
// zmm bases of packed_q4k_q5k.h plus a dot product of 4 codes), so that
// every instruction set runs the same integer sums and float operations.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/cpu/activation_quant.h"
#include "kernels/cpu/packed_kernel.h"
#include "kernels/cpu/packed_q4k_q5k.h"

namespace kvscope::kernels::cpu::detail {

// One super-block (256 columns, 16 sub-blocks s of 16) of a 16-row tile;
// a tile is cols / 256 of them in a row. R = row, k = group 0..3 of 4
// columns in a sub-block, j = 0..3 a column in the group:
//
//   Q2_K (1344 bytes = the file's 16 x 84, 21 lines)
//   0     d[R]        f16 x 16
//   32    dmin[R]     f16 x 16
//   64    sm[s][R]    u8 x 16 x 16: the file's scales byte, scale | min << 4
//   320   lo[s]       64 bytes per sub-block: bits 2k of byte 4R + j hold
//                     the 2-bit code of column 16s + 4k + j
//
//   Q3_K (1856 bytes for the file's 16 x 110 = 1760, +5.5%, 29 lines)
//   0     d[R]        f16 x 16, then 32 zero bytes
//   64    sc[s][R]    int8 x 16 x 16: the 6-bit scales - 32
//   320   lo[s]       as Q2_K's: the low 2 bits of the codes
//   1344  hi[s / 2]   64 bytes per pair of sub-blocks: bit k (even s) or
//                     4 + k (odd s) of byte 4R + j is the third bit of
//                     column 16s + 4k + j
//
// A 64-byte run is one zmm of 16 rows x 4 bytes, each byte the 4 columns
// of its group: per group one shift and mask give the codes for one
// dpbusd with an input's 4 codes broadcast. Q3_K's codes are stored
// unsigned, u = q + 4 (0..7); its sums start at -4 x the activations'.
struct Q2kQ3kTileLayout {
    static constexpr std::size_t kSubBlocks = 16;
    static constexpr std::size_t kD = 0;
    static constexpr std::size_t kDmin = 32;
    static constexpr std::size_t kScales = 64;
    static constexpr std::size_t kLow = 320;
    static constexpr std::size_t kHigh = kLow + kSubBlocks * 64; // 1344
    static constexpr std::size_t super_block_bytes(bool q3) { return q3 ? kHigh + kSubBlocks / 2 * 64 : kHigh; }
};

#if defined(KVSCOPE_KERNELS_AVX512VNNI)
PackedGemmFn q2k_q3k_avx512_gemm(bool q3);
#endif
#if defined(KVSCOPE_KERNELS_AVXVNNI)
PackedGemmFn q2k_q3k_avxvnni_gemm(bool q3);
#endif
#if defined(KVSCOPE_KERNELS_AVX2)
PackedGemmFn q2k_q3k_avx2_gemm(bool q3);
#endif
#if defined(KVSCOPE_KERNELS_NEON)
PackedGemmFn q2k_q3k_neon_gemm(bool q3);
#endif
#if defined(KVSCOPE_KERNELS_NEON_DOTPROD)
PackedGemmFn q2k_q3k_neondot_gemm(bool q3);
#endif

namespace q2k_q3k {
namespace {

using L = Q2kQ3kTileLayout;

// The super-block kPrefetchAhead on, a sub-block's share of its lines at
// a time (as the Q4_K walk does).
inline constexpr std::size_t kPrefetchAhead = 2;

// Byte-wise (v >> n) & 3, or for the third bits ((v >> n) & 1) << 2.
template <typename V>
typename V::I low2(typename V::I v, int n) {
    return V::and_(V::srli16(v, n), V::set1_i8(3));
}
template <typename V>
typename V::I third_bit(typename V::I v, int n) {
    return V::and_(n >= 2 ? V::srli16(v, n - 2) : V::slli16(v, 2 - n), V::set1_i8(4));
}

// Rows row0 .. row0 + V::kRows of a tile times N inputs. Per super-block,
// row and input, with sum_s the exact int32 dot product of sub-block s's
// codes and the input's:
//   Q2_K: scaled = sum_s sc[s] * sum_s, mins = sum_s m[s] * bsums[s]
//         acc = float(mins) * -dmin; acc = fma(float(scaled), d, acc)
//   Q3_K: acc = float(sum_s sc[s] * (sum_s - 4 bsums[s])) * d
//   out = fma(d_x, acc, out)
template <typename V, int N, bool Q3>
void walk_rows(const std::byte* tile, std::size_t row0, const std::byte* act, std::size_t act_stride,
               std::size_t cols, float* y, std::size_t y_stride, std::size_t valid) {
    using I = typename V::I;
    using F = typename V::F;
    const std::size_t sb_bytes = L::super_block_bytes(Q3);
    const std::size_t lines = sb_bytes / kPackedAlign;
    F out[N];
    for (int i = 0; i < N; ++i)
        out[i] = V::zero_f();
    for (std::size_t b = 0; b < cols / kActSuperValues; ++b) {
        const std::byte* t = tile + b * sb_bytes;
        const ActBlock256* a[N];
        for (int i = 0; i < N; ++i)
            a[i] = reinterpret_cast<const ActBlock256*>(act + i * act_stride) + b;
        I scaled[N], mins[N];
        for (int i = 0; i < N; ++i)
            scaled[i] = mins[i] = V::zero_i();
        for (std::size_t s = 0; s < L::kSubBlocks; ++s) {
            for (std::size_t line = s * lines / L::kSubBlocks; line < (s + 1) * lines / L::kSubBlocks; ++line)
                __builtin_prefetch(t + kPrefetchAhead * sb_bytes + line * kPackedAlign);
            const I raw = Q3 ? V::i8_to_i32(t + L::kScales + kPackedRows * s + row0)
                             : V::u8_to_i32(t + L::kScales + kPackedRows * s + row0);
            const I sc = Q3 ? raw : V::and_(raw, V::set1_i32(0x0F));
            if constexpr (!Q3)
                if (s % 2 == 1) { // m of sub-blocks s - 1 and s in the two words of a lane: one dpwssd
                    const I m_prev = V::srli32(V::u8_to_i32(t + L::kScales + kPackedRows * (s - 1) + row0), 4);
                    const I m2 = V::or_(m_prev, V::slli32_16(V::srli32(raw, 4)));
                    for (int i = 0; i < N; ++i)
                        mins[i] = V::dpwssd(mins[i], m2, q4k_q5k::load_i32(a[i]->bsums + s - 1));
                }
            const I lo = V::load(t + L::kLow + 64 * s + 4 * row0);
            I hi{};
            if constexpr (Q3)
                hi = V::load(t + L::kHigh + 64 * (s / 2) + 4 * row0);
            I sum[N];
            for (int i = 0; i < N; ++i)
                sum[i] = Q3 ? V::set1_i32(-4 * a[i]->bsums[s]) : V::zero_i();
            for (int k = 0; k < 4; ++k) {
                I w = low2<V>(lo, 2 * k);
                if constexpr (Q3)
                    w = V::or_(w, third_bit<V>(hi, k + 4 * static_cast<int>(s % 2)));
                for (int i = 0; i < N; ++i)
                    sum[i] = V::dot4(sum[i], w, a[i]->qs + 16 * s + 4 * k);
            }
            for (int i = 0; i < N; ++i)
                scaled[i] = V::add32(scaled[i], V::mullo32(sum[i], sc));
        }
        const F d = V::load_f16(t + L::kD + 2 * row0);
        for (int i = 0; i < N; ++i) {
            F acc;
            if constexpr (Q3)
                acc = V::mul(V::cvt(scaled[i]), d);
            else
                acc = V::fma(V::cvt(scaled[i]), d,
                             V::mul(V::cvt(mins[i]), V::neg(V::load_f16(t + L::kDmin + 2 * row0))));
            out[i] = V::fma(V::set1_f(a[i]->d), acc, out[i]);
        }
    }
    for (int i = 0; i < N; ++i)
        V::store(y + i * y_stride + row0, out[i], valid);
}

template <typename V, int N, bool Q3>
void gemm(const std::byte* tile, const std::byte* act, std::size_t act_stride, std::size_t count,
          std::size_t cols, float* y, std::size_t y_stride, std::size_t rows) {
    if constexpr (N > 1)
        if (count < N)
            return gemm<V, N - 1, Q3>(tile, act, act_stride, count, cols, y, y_stride, rows);
    for (std::size_t row0 = 0; row0 < rows; row0 += V::kRows) {
        const std::size_t valid = rows - row0 < V::kRows ? rows - row0 : V::kRows;
        walk_rows<V, N, Q3>(tile, row0, act, act_stride, cols, y, y_stride, valid);
    }
}

template <typename V, int N>
PackedGemmFn gemm_fn(bool q3) {
    return {q3 ? gemm<V, N, true> : gemm<V, N, false>, N};
}

} // namespace
} // namespace q2k_q3k
} // namespace kvscope::kernels::cpu::detail
