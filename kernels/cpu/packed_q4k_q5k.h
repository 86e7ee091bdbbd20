// Internal to the Q4_K/Q5_K tile kernels (packed_q4k_q5k*.cpp): the tile
// layout's offsets, shared by pack_tile and every kernel, the per-ISA
// kernels, and the one tile walk they all instantiate.
//
// The walk is written once over a vector type `V` (V::kRows rows per
// register: 16 in a zmm, 8 in a ymm, whose kernels take a tile as two
// 8-row halves) so that every instruction set runs the same integer sums
// and the same float operations in the same order, per row and input:
// outputs are bit-identical across them by construction. V supplies the
// loads, the nibble and bit operations, the two integer dot products
// (dpbusd's 4 u8 x s8 products per int32 lane, dpwssd's 2 s16 x s16) and
// the float ones. The walk uses no intrinsics itself, so this header may be
// included by files compiled without SIMD flags; the 8-row ymm operations
// that the AVX2 and AVX-VNNI kernels share (all but their dot products) are
// compiled only where AVX2 code generation is on.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#if defined(__AVX2__)
#include <immintrin.h>
#endif
#if defined(__ARM_NEON)
#include <arm_neon.h>
#endif

#include "kernels/cpu/activation_quant.h"
#include "kernels/cpu/packed_kernel.h"
#include "kernels/cpu/quant_blocks.h"

namespace kvscope::kernels::cpu::detail {

// One super-block (256 columns) of a tile; a tile is cols / 256 of them in
// a row. Offsets in bytes, R = row 0..15, j = sub-block 0..7 (32 values),
// g = group 0..3 of 8 values in a sub-block:
//
//   0     d[R]        f16 x 16      the rows' super-block scales
//   32    dmin[R]     f16 x 16      their min scales
//   64    sc[j][R]    u8 x 8 x 16   6-bit sub-block scales, unpacked
//   192   m[j][R]     u8 x 8 x 16   6-bit sub-block mins, unpacked
//   320   qs[j][g][R] u8 x 4, 8 x 4 x 16 x 4 = 2048: byte i of row R holds
//                     value 32j + 8g + i in its low nibble and value
//                     32j + 8g + 4 + i in its high nibble
//   2368  Q5_K only: qh[j][R] 4 bytes: bit 2g of byte i is the fifth bit of
//                     value 32j + 8g + i, bit 2g + 1 that of 32j + 8g + 4 + i
//   2368 (Q4_K) / 2880 (Q5_K): the next super-block
//
// A 64-byte run qs[j][g] is one zmm: lane R (4 bytes) is row R, so the low
// nibbles meet an input's 4 codes 32j + 8g .. + 3 in one dpbusd with them
// broadcast, the high nibbles the next 4. Scales and mins are unpacked from
// their 12-byte packing once here rather than for every input group, for 4
// bytes per row per super-block (Q4_K: 2368 bytes for 16 x 144 in the
// file, +2.8%); every super-block starts on a cache line.
struct KTileLayout {
    static constexpr std::size_t kD = 0;
    static constexpr std::size_t kDmin = 32;
    static constexpr std::size_t kScales = 64;
    static constexpr std::size_t kMins = 192;
    static constexpr std::size_t kQs = 320;
    static constexpr std::size_t kQh = 2368;
    static constexpr std::size_t kSubBlocks = 8;
    static constexpr std::size_t kGroups = 4;
    static constexpr std::size_t kQsSubBlock = kGroups * kPackedRows * 4; // 256
    static constexpr std::size_t kQhSubBlock = kPackedRows * 4;           // 64

    static constexpr std::size_t super_block_bytes(bool q5) { return q5 ? kQh + kSubBlocks * kQhSubBlock : kQh; }
};

// IQ4_XS tiles share the walk: no mins, signed sub-block scales, and
// nibbles that index kIq4nlValues. One super-block (35 lines):
//
//   0     d[R]        f16 x 16
//   32    zeros
//   64    sc[j][R]    int8 x 8 x 16: the sub-block scales ls - 32
//   192   qs[j][g][R] as Q4_K's, the nibbles the GGUF's table indices
//   2240: the next super-block (the file's 16 x 136 = 2176, +2.9%)
//
// The walk looks each nibble up as kIq4nlValues + 128 (unsigned, for
// dpbusd): a sub-block's sum starts at -128 x its activation sum.
struct Iq4xsTileLayout {
    static constexpr std::size_t kD = 0;
    static constexpr std::size_t kScales = 64;
    static constexpr std::size_t kQs = 192;
    static constexpr std::size_t kSuperBlockBytes = kQs + KTileLayout::kSubBlocks * KTileLayout::kQsSubBlock;
};

// The three formats of the walk.
enum class KFormat { Q4K, Q5K, IQ4XS };

#if defined(KVSCOPE_KERNELS_AVX512VNNI)
PackedGemmFn q4k_q5k_avx512_gemm(KFormat format);
#endif
#if defined(KVSCOPE_KERNELS_AVXVNNI)
PackedGemmFn q4k_q5k_avxvnni_gemm(KFormat format);
#endif
#if defined(KVSCOPE_KERNELS_AVX2)
PackedGemmFn q4k_q5k_avx2_gemm(KFormat format);
#endif
#if defined(KVSCOPE_KERNELS_NEON)
PackedGemmFn q4k_q5k_neon_gemm(KFormat format);
#endif
#if defined(KVSCOPE_KERNELS_NEON_DOTPROD)
PackedGemmFn q4k_q5k_neondot_gemm(KFormat format);
#endif

// Internal linkage: compiled into each instruction set's file (see the
// README's SIMD dispatch).
namespace q4k_q5k {
namespace {

using L = KTileLayout;

inline std::int32_t load_i32(const void* p) {
    std::int32_t v;
    std::memcpy(&v, p, sizeof v);
    return v;
}

// A decode step streams every tile from memory once: each sub-block asks
// for kPrefetchLines lines of the super-block kPrefetchAhead on (the next
// tile's, past the last one), 48 lines per super-block of 37 (Q4_K) or 45.
// Measured on a 16384 x 4096 matrix, one input, one thread: Q4_K 21 -> 36
// GB/s, Q5_K 16 -> 33 GB/s; 1 or 4 super-blocks ahead gained less.
inline constexpr std::size_t kPrefetchAhead = 2;
inline constexpr std::size_t kPrefetchLines = 6;

// Rows row0 .. row0 + V::kRows of a tile (row0 = 0 or, for ymm, 8) times N
// inputs, over all super-blocks. Per super-block, row and input:
//   mins = sum_j m[j] * (bsums[2j] + bsums[2j+1])       (exact int32)
//   acc  = float(mins) * -dmin                          (IQ4_XS: acc = 0)
//   acc  = fma(float(sum_j), d * sc[j], acc)  for j = 0..7, where sum_j is
//          the exact int32 dot product of sub-block j's codes and the input's
//   out  = fma(d_x, acc, out)
template <typename V, int N, KFormat K>
void walk_rows(const std::byte* tile, std::size_t row0, const std::byte* act, std::size_t act_stride,
               std::size_t cols, float* y, std::size_t y_stride, std::size_t valid) {
    using I = typename V::I;
    using F = typename V::F;
    constexpr bool kQ5 = K == KFormat::Q5K, kTable = K == KFormat::IQ4XS;
    constexpr std::size_t kScales = kTable ? Iq4xsTileLayout::kScales : L::kScales;
    constexpr std::size_t kQs = kTable ? Iq4xsTileLayout::kQs : L::kQs;
    const std::size_t supers = cols / kActSuperValues;
    const std::size_t sb_bytes = kTable ? Iq4xsTileLayout::kSuperBlockBytes : L::super_block_bytes(kQ5);
    const I low4 = V::set1_i8(0x0F);
    F out[N];
    for (int i = 0; i < N; ++i)
        out[i] = V::zero_f();
    for (std::size_t b = 0; b < supers; ++b) {
        const std::byte* t = tile + b * sb_bytes;
        const ActBlock256* a[N];
        for (int i = 0; i < N; ++i)
            a[i] = reinterpret_cast<const ActBlock256*>(act + i * act_stride) + b;
        const F d = V::load_f16(t + L::kD + 2 * row0);
        F acc[N];
        if constexpr (kTable) {
            for (int i = 0; i < N; ++i)
                acc[i] = V::zero_f();
        } else {
            I mins[N];
            for (int i = 0; i < N; ++i)
                mins[i] = V::zero_i();
            for (std::size_t j = 0; j < L::kSubBlocks; ++j) {
                // m in both 16-bit halves of its row's lane: one dpwssd
                // takes both bsums of the sub-block.
                const I m = V::u8_to_i32(t + L::kMins + kPackedRows * j + row0);
                const I m2 = V::or_(m, V::slli32_16(m));
                for (int i = 0; i < N; ++i)
                    mins[i] = V::dpwssd(mins[i], m2, load_i32(a[i]->bsums + 2 * j));
            }
            const F neg_dmin = V::neg(V::load_f16(t + L::kDmin + 2 * row0));
            for (int i = 0; i < N; ++i)
                acc[i] = V::mul(V::cvt(mins[i]), neg_dmin);
        }
        for (std::size_t j = 0; j < L::kSubBlocks; ++j) {
            const std::byte* ahead = t + kPrefetchAhead * sb_bytes + j * kPrefetchLines * kPackedAlign;
            for (std::size_t k = 0; k < kPrefetchLines; ++k)
                __builtin_prefetch(ahead + k * kPackedAlign);
            const std::byte* sc = t + kScales + kPackedRows * j + row0;
            const F dsc = V::mul(d, V::cvt(kTable ? V::i8_to_i32(sc) : V::u8_to_i32(sc)));
            const std::byte* qs = t + kQs + j * L::kQsSubBlock + 4 * row0;
            I h{};
            if constexpr (kQ5)
                h = V::load(t + L::kQh + j * L::kQhSubBlock + 4 * row0);
            I sum[N];
            for (int i = 0; i < N; ++i)
                sum[i] = kTable ? V::table_start(a[i]->bsums[2 * j] + a[i]->bsums[2 * j + 1]) : V::zero_i();
            for (std::size_t g = 0; g < L::kGroups; ++g) {
                const I q = V::load(qs + g * kPackedRows * 4);
                I lo = V::and_(q, low4);
                I hi = V::and_(V::srli16(q, 4), low4);
                if constexpr (kQ5) {
                    lo = V::or_(lo, V::and_(V::slli16(h, 4), V::set1_i8(0x10)));
                    hi = V::or_(hi, V::and_(V::slli16(h, 3), V::set1_i8(0x10)));
                    h = V::srli16(h, 2);
                }
                const std::size_t k = 32 * j + 8 * g;
                if constexpr (kTable) {
                    lo = V::iq4nl_codes(lo);
                    hi = V::iq4nl_codes(hi);
                    for (int i = 0; i < N; ++i)
                        sum[i] = V::dot8_table(sum[i], lo, hi, a[i]->qs + k);
                } else {
                    for (int i = 0; i < N; ++i)
                        sum[i] = V::dot8(sum[i], lo, hi, a[i]->qs + k);
                }
            }
            for (int i = 0; i < N; ++i)
                acc[i] = V::fma(V::cvt(sum[i]), dsc, acc[i]);
        }
        for (int i = 0; i < N; ++i)
            out[i] = V::fma(V::set1_f(a[i]->d), acc[i], out[i]);
    }
    for (int i = 0; i < N; ++i)
        V::store(y + i * y_stride + row0, out[i], valid);
}

// One call of the PackedGemm contract: inputs in one group of count <= N,
// the tile's rows in V::kRows-row passes (rows past `rows` are skipped).
template <typename V, int N, KFormat K>
void gemm(const std::byte* tile, const std::byte* act, std::size_t act_stride, std::size_t count,
          std::size_t cols, float* y, std::size_t y_stride, std::size_t rows) {
    if constexpr (N > 1)
        if (count < N)
            return gemm<V, N - 1, K>(tile, act, act_stride, count, cols, y, y_stride, rows);
    for (std::size_t row0 = 0; row0 < rows; row0 += V::kRows) {
        const std::size_t valid = rows - row0 < V::kRows ? rows - row0 : V::kRows;
        walk_rows<V, N, K>(tile, row0, act, act_stride, cols, y, y_stride, valid);
    }
}

template <typename V, int N>
PackedGemmFn gemm_fn(KFormat format) {
    switch (format) {
    case KFormat::Q4K: return {gemm<V, N, KFormat::Q4K>, N};
    case KFormat::Q5K: return {gemm<V, N, KFormat::Q5K>, N};
    case KFormat::IQ4XS: return {gemm<V, N, KFormat::IQ4XS>, N};
    }
    return {};
}

// kIq4nlValues + 128 (IQ4_XS's unsigned codes) as a 16-byte pshufb table.
inline std::int64_t iq4nl_table_half(int half) {
    std::uint64_t bits = 0;
    for (int i = 0; i < 8; ++i)
        bits |= static_cast<std::uint64_t>(static_cast<std::uint8_t>(kIq4nlValues[8 * half + i] + 128)) << (8 * i);
    return static_cast<std::int64_t>(bits);
}

#if defined(__AVX2__)
// 8 rows per ymm: a tile in two passes over the same bytes, each reading
// the first (rows 0-7) or second half of every 64- or 16-byte row run.
// The kernels derive from this and add dpwssd and dot8.
struct YmmBase {
    using I = __m256i;
    using F = __m256;
    static constexpr std::size_t kRows = 8;

    static I zero_i() { return _mm256_setzero_si256(); }
    static F zero_f() { return _mm256_setzero_ps(); }
    static I set1_i8(char v) { return _mm256_set1_epi8(v); }
    static F set1_f(float v) { return _mm256_set1_ps(v); }
    static I load(const std::byte* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }
    static F load_f16(const std::byte* p) {
        return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    }
    static I u8_to_i32(const std::byte* p) {
        return _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
    }
    static I i8_to_i32(const std::byte* p) {
        return _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
    }
    static I iq4nl_codes(I nibbles) {
        const __m128i table = _mm_set_epi64x(iq4nl_table_half(1), iq4nl_table_half(0));
        return _mm256_shuffle_epi8(_mm256_broadcastsi128_si256(table), nibbles);
    }
    static I and_(I a, I b) { return _mm256_and_si256(a, b); }
    static I or_(I a, I b) { return _mm256_or_si256(a, b); }
    static I srli16(I a, int n) { return _mm256_srli_epi16(a, n); }
    static I slli16(I a, int n) { return _mm256_slli_epi16(a, n); }
    static I slli32_16(I a) { return _mm256_slli_epi32(a, 16); }
    static I srli32(I a, int n) { return _mm256_srli_epi32(a, n); }
    static I set1_i32(std::int32_t v) { return _mm256_set1_epi32(v); }
    static I add32(I a, I b) { return _mm256_add_epi32(a, b); }
    static I mullo32(I a, I b) { return _mm256_mullo_epi32(a, b); }
    static F cvt(I a) { return _mm256_cvtepi32_ps(a); }
    static F neg(F a) { return _mm256_sub_ps(_mm256_setzero_ps(), a); }
    static F mul(F a, F b) { return _mm256_mul_ps(a, b); }
    static F fma(F a, F b, F c) { return _mm256_fmadd_ps(a, b, c); }
    static void store(float* y, F v, std::size_t valid) {
        if (valid == kRows)
            return _mm256_storeu_ps(y, v);
        const I lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
        _mm256_maskstore_ps(y, _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(valid)), lanes), v);
    }
};
#endif

#if defined(__AVX512F__)
// 16 rows per zmm: the whole tile in one pass. The kernels derive from
// this and add their dot products.
struct ZmmBase {
    using I = __m512i;
    using F = __m512;
    static constexpr std::size_t kRows = 16;

    static I zero_i() { return _mm512_setzero_si512(); }
    static F zero_f() { return _mm512_setzero_ps(); }
    static I set1_i8(char v) { return _mm512_set1_epi8(v); }
    static F set1_f(float v) { return _mm512_set1_ps(v); }
    static I load(const std::byte* p) { return _mm512_loadu_si512(p); }
    static F load_f16(const std::byte* p) {
        return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
    }
    static I u8_to_i32(const std::byte* p) {
        return _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    }
    static I i8_to_i32(const std::byte* p) {
        return _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    }
    static I iq4nl_codes(I nibbles) {
        const __m128i table = _mm_set_epi64x(q4k_q5k::iq4nl_table_half(1), q4k_q5k::iq4nl_table_half(0));
        return _mm512_shuffle_epi8(_mm512_broadcast_i32x4(table), nibbles);
    }
    static I and_(I a, I b) { return _mm512_and_si512(a, b); }
    static I or_(I a, I b) { return _mm512_or_si512(a, b); }
    static I srli16(I a, int n) { return _mm512_srli_epi16(a, static_cast<unsigned>(n)); }
    static I slli16(I a, int n) { return _mm512_slli_epi16(a, static_cast<unsigned>(n)); }
    static I slli32_16(I a) { return _mm512_slli_epi32(a, 16); }
    static I srli32(I a, int n) { return _mm512_srli_epi32(a, static_cast<unsigned>(n)); }
    static I set1_i32(std::int32_t v) { return _mm512_set1_epi32(v); }
    static I add32(I a, I b) { return _mm512_add_epi32(a, b); }
    static I mullo32(I a, I b) { return _mm512_mullo_epi32(a, b); }
    static F cvt(I a) { return _mm512_cvtepi32_ps(a); }
    static F neg(F a) { return _mm512_sub_ps(_mm512_setzero_ps(), a); }
    static F mul(F a, F b) { return _mm512_mul_ps(a, b); }
    static F fma(F a, F b, F c) { return _mm512_fmadd_ps(a, b, c); }
    static void store(float* y, F v, std::size_t valid) {
        _mm512_mask_storeu_ps(y, static_cast<__mmask16>((1u << valid) - 1), v);
    }
};
#endif

#if defined(__ARM_NEON)
// 4 rows per 128-bit register: a tile in four passes over the same bytes,
// each reading its quarter (16 bytes) of every 64-byte run and its 4 rows'
// scales. The NEON and dot-product kernels derive from this and add dot8,
// dot8_table, table_start and dot4. The walks shift by a run-time count
// (vshlq with a negative count shifts right) and mask every shifted byte
// to bits that came from the same byte, so the byte-wise shifts here give
// what srli16 / slli16 give on x86.
struct NeonBase {
    using I = int32x4_t;
    using F = float32x4_t;
    static constexpr std::size_t kRows = 4;

    static I zero_i() { return vdupq_n_s32(0); }
    static F zero_f() { return vdupq_n_f32(0.0f); }
    static I set1_i8(char v) { return vreinterpretq_s32_s8(vdupq_n_s8(static_cast<std::int8_t>(v))); }
    static F set1_f(float v) { return vdupq_n_f32(v); }
    static I load(const std::byte* p) { return vreinterpretq_s32_u8(vld1q_u8(reinterpret_cast<const std::uint8_t*>(p))); }
    static F load_f16(const std::byte* p) {
        return vcvt_f32_f16(vreinterpret_f16_u8(vld1_u8(reinterpret_cast<const std::uint8_t*>(p))));
    }
    static I u8_to_i32(const std::byte* p) {
        const uint16x8_t wide = vmovl_u8(vcreate_u8(static_cast<std::uint32_t>(load_i32(p))));
        return vreinterpretq_s32_u32(vmovl_u16(vget_low_u16(wide)));
    }
    static I i8_to_i32(const std::byte* p) {
        const int16x8_t wide = vmovl_s8(vcreate_s8(static_cast<std::uint32_t>(load_i32(p))));
        return vmovl_s16(vget_low_s16(wide));
    }
    // Signed kIq4nlValues: the NEON products are signed x signed, so no
    // offset (table_start is 0 on both kernels).
    static I iq4nl_codes(I nibbles) {
        return vreinterpretq_s32_s8(vqtbl1q_s8(vld1q_s8(kIq4nlValues), vreinterpretq_u8_s32(nibbles)));
    }
    static I table_start(int) { return zero_i(); }
    static I and_(I a, I b) { return vandq_s32(a, b); }
    static I or_(I a, I b) { return vorrq_s32(a, b); }
    static I srli16(I a, int n) {
        return vreinterpretq_s32_u8(vshlq_u8(vreinterpretq_u8_s32(a), vdupq_n_s8(static_cast<std::int8_t>(-n))));
    }
    static I slli16(I a, int n) {
        return vreinterpretq_s32_u8(vshlq_u8(vreinterpretq_u8_s32(a), vdupq_n_s8(static_cast<std::int8_t>(n))));
    }
    static I slli32_16(I a) { return vshlq_n_s32(a, 16); }
    static I srli32(I a, int n) {
        return vreinterpretq_s32_u32(vshlq_u32(vreinterpretq_u32_s32(a), vdupq_n_s32(-n)));
    }
    static I set1_i32(std::int32_t v) { return vdupq_n_s32(v); }
    static I add32(I a, I b) { return vaddq_s32(a, b); }
    static I mullo32(I a, I b) { return vmulq_s32(a, b); }
    // Each lane: acc + w.lo x pair.lo + w.hi x pair.hi (16-bit halves).
    // The halves of w narrow once for all inputs; per input two widening
    // multiply-adds by the pair's lanes.
    static I dpwssd(I acc, I w, std::int32_t pair) {
        const int16x4_t p = vreinterpret_s16_s32(vdup_n_s32(pair));
        acc = vmlal_lane_s16(acc, vmovn_s32(w), p, 0);
        return vmlal_lane_s16(acc, vshrn_n_s32(w, 16), p, 1);
    }
    static F cvt(I a) { return vcvtq_f32_s32(a); }
    static F neg(F a) { return vsubq_f32(vdupq_n_f32(0.0f), a); } // 0 - a, as x86: +0 for a = 0
    static F mul(F a, F b) { return vmulq_f32(a, b); }
    static F fma(F a, F b, F c) { return vfmaq_f32(c, a, b); }
    static void store(float* y, F v, std::size_t valid) {
        if (valid == kRows)
            return vst1q_f32(y, v);
        float lanes[kRows];
        vst1q_f32(lanes, v);
        for (std::size_t r = 0; r < valid; ++r)
            y[r] = lanes[r];
    }
};
#endif

} // namespace
} // namespace q4k_q5k
} // namespace kvscope::kernels::cpu::detail
