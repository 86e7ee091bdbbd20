// Internal to the blocks-of-32 tile kernels (packed_blocks32*.cpp; Q8_0,
// Q4_0, Q5_0, Q4_1, Q5_1, IQ4_NL, MXFP4): the
// numbers of the tile layout drawn in packed_blocks32.cpp, the per-ISA
// kernels, what the kernels of both register widths share (group decoding,
// prefetch), and the 256-bit kernel that the AVX2 and AVX-VNNI files both
// compile (they differ only in how 4 byte products become an int32 sum).
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/cpu/packed_kernel.h"
#include "kernels/cpu/quant_blocks.h"

namespace kvscope::kernels::cpu::detail::blocks32 {

// A group: 4 consecutive values of a block for all 16 rows, one int32
// lane (4 codes) per row, the operand of one dpbusd.
inline constexpr std::size_t kGroupValues = 4;
inline constexpr std::size_t kGroupBytes = kPackedRows * kGroupValues; // 64
inline constexpr std::size_t kGroups = kQuantBlockValues / kGroupValues; // 8
// Q4_0/Q5_0: groups g and g + 4 share one 64-byte line of nibbles.
inline constexpr std::size_t kNibbleBytes = kGroups / 2 * kGroupBytes; // 256
// Q5_0: one 64-bit byte mask per group, after the nibbles.
inline constexpr std::size_t kHighBitBytes = kGroups * sizeof(std::uint64_t); // 64

// Code bytes per block (all 16 rows): a multiple of 64.
constexpr std::size_t code_bytes(WeightType type) {
    switch (type) {
    case WeightType::Q8_0: return kGroups * kGroupBytes;
    case WeightType::Q4_0:
    case WeightType::Q4_1:
    case WeightType::IQ4_NL:
    case WeightType::MXFP4: return kNibbleBytes;
    case WeightType::Q5_0:
    case WeightType::Q5_1: return kNibbleBytes + kHighBitBytes;
    default: return 0;
    }
}

// Whether codes carry a fifth bit (Q5_0, Q5_1).
constexpr bool has_fifth_bit(WeightType type) { return type == WeightType::Q5_0 || type == WeightType::Q5_1; }

// Whether the nibbles index a table (IQ4_NL: kIq4nlValues, MXFP4:
// kMxfp4Values): the kernels look the codes up, as the table's values +
// code_offset, when they decode a group.
constexpr bool is_table(WeightType type) { return type == WeightType::IQ4_NL || type == WeightType::MXFP4; }

// Bytes of one row's block scale: an f16 d, or MXFP4's E8M0 byte, which
// f16 cannot hold (2^-128..2^127); the kernels turn it into the float
// 2^(e - 128) exactly.
constexpr std::size_t scale_size(WeightType type) { return type == WeightType::MXFP4 ? 1 : sizeof(std::uint16_t); }
// A block's scales for the 16 rows.
constexpr std::size_t scale_bytes(WeightType type) { return kPackedRows * scale_size(type); }

// Whether rows have a min m per block (value = d q + m: Q4_1, Q5_1); its
// f16 values follow the scales, and each block adds m x s (the activation
// block's d x sum of codes, as ggml rounds it: ActBlock32Sum).
constexpr bool has_min(WeightType type) { return type == WeightType::Q4_1 || type == WeightType::Q5_1; }

// The code the kernels multiply = signed code + offset (unsigned, as
// dpbusd wants its register operand), so a block's integer sum starts at
// -offset x the activation block's sum.
constexpr std::int32_t code_offset(WeightType type) {
    switch (type) {
    case WeightType::Q8_0:
    case WeightType::IQ4_NL: return 128;
    case WeightType::MXFP4: return 12; // -12..12 as 0..24: AVX2's maddubs takes them unsigned, unsaturated
    case WeightType::Q4_0: return 8;
    case WeightType::Q5_0: return 16;
    default: return 0; // Q4_1, Q5_1: unsigned codes, the min apart
    }
}

// The scales region follows the codes of all blocks, the mins the scales.
constexpr std::size_t scales_offset(WeightType type, std::size_t cols) {
    return cols / kQuantBlockValues * code_bytes(type);
}
constexpr std::size_t mins_offset(WeightType type, std::size_t cols) {
    return scales_offset(type, cols) + cols / kQuantBlockValues * scale_bytes(type);
}

// Bytes a block column takes in a tile: codes, scale and min.
constexpr std::size_t block_tile_bytes(WeightType type) {
    return code_bytes(type) + scale_bytes(type) * (has_min(type) ? 2 : 1);
}

#if defined(KVSCOPE_KERNELS_AVX512VNNI)
PackedGemmFn avx512_packed_gemm(WeightType type);
#endif
#if defined(KVSCOPE_KERNELS_AVXVNNI)
PackedGemmFn avxvnni_packed_gemm(WeightType type);
#endif
#if defined(KVSCOPE_KERNELS_AVX2)
PackedGemmFn avx2_packed_gemm(WeightType type);
#endif
#if defined(KVSCOPE_KERNELS_NEON)
PackedGemmFn neon_packed_gemm(WeightType type);
#endif
#if defined(KVSCOPE_KERNELS_NEON_DOTPROD)
PackedGemmFn neondot_packed_gemm(WeightType type);
#endif
#if defined(KVSCOPE_KERNELS_NEON_I8MM)
PackedGemmFn i8mm_packed_gemm(WeightType type);
#endif

} // namespace kvscope::kernels::cpu::detail::blocks32

// What the kernels of every instruction set share. Internal linkage: each
// file gets its own copy, compiled with its own instruction set.
namespace kvscope::kernels::cpu::detail::blocks32 {
namespace {

// 2^(e - 128) as floats from E8M0 bytes e widened to int32 lanes, exactly
// as e8m0_half_to_f32 (quant_blocks.h): the bits (e - 1) << 23 for e >= 2;
// for e < 2 those are negative or 0 and the subnormal 0x200000 << e, which
// is at most 0x800000 (e clamped to 2) below them, is the larger.
template <typename Simd>
inline typename Simd::Reg e8m0_half_bits(typename Simd::Reg e) {
    const auto normal = Simd::sub32(Simd::shl32(e, 23), Simd::set32(0x00800000));
    const auto subnormal = Simd::shlv32(Simd::set32(0x00200000), Simd::min_u32(e, Simd::set32(2)));
    return Simd::max_i32(normal, subnormal);
}

// A decode step streams the tiles in order (codes, scales, the next tile)
// and reads each byte once: while on block b, the lines kPrefetchBytes
// ahead of the walk are requested, a block's share of lines per block.
// Through matmul at n = 1 on an 8192 x 2048 matrix (not in cache) this
// measured 5-40% faster than the hardware prefetcher alone (noisy, shared
// machine); putting the scales before the codes measured no different.
inline constexpr std::size_t kPrefetchBytes = 4096;

template <WeightType T>
inline void prefetch_ahead(const std::byte* tile, std::size_t b) {
    constexpr std::size_t lines = (block_tile_bytes(T) + kPackedAlign - 1) / kPackedAlign;
    for (std::size_t l = 0; l < lines; ++l) // prefetcht0 on x86, prfm pldl1keep on AArch64
        __builtin_prefetch(tile + kPrefetchBytes + (b * lines + l) * kPackedAlign, 0, 3);
}

} // namespace
} // namespace kvscope::kernels::cpu::detail::blocks32

// The x86 pieces and the 256-bit kernel, seen only by files compiled
// with AVX2 (the AVX-512 file too). Internal linkage: each file gets its
// own copy with its own instruction set.
#if defined(__AVX2__)
#include <immintrin.h>

#include <array>
#include <cstring>

#include "kernels/cpu/activation_quant.h"

namespace kvscope::kernels::cpu::detail::blocks32 {
namespace {

// A ymm holds 8 rows' lanes: half h of a tile is bytes [32 h, 32 h + 32)
// of every 64-byte group line.
inline constexpr std::size_t kHalfRows = kPackedRows / 2;
inline constexpr std::size_t kHalfBytes = kGroupBytes / 2;
inline constexpr std::size_t kYmmMaxInputs = 4; // 2 x 4 accumulators + codes fit 16 ymm

inline std::int32_t load_i32(const void* p) {
    std::int32_t v;
    std::memcpy(&v, p, sizeof v);
    return v;
}

// The unsigned codes of a table type (is_table): its values + code_offset.
template <WeightType T>
inline constexpr std::array<std::uint8_t, 16> kCodeTable = [] {
    const std::int8_t* values = T == WeightType::MXFP4 ? kMxfp4Values : kIq4nlValues;
    std::array<std::uint8_t, 16> table{};
    for (std::size_t i = 0; i < 16; ++i)
        table[i] = static_cast<std::uint8_t>(values[i] + code_offset(T));
    return table;
}();

// kCodeTable<T> as a pshufb table.
template <WeightType T>
inline __m128i code_table() {
    return _mm_loadu_si128(reinterpret_cast<const __m128i*>(kCodeTable<T>.data()));
}

// Calls f(g, codes) for the 8 groups of a block, each group's unsigned
// codes decoded once into a register of Simd (Ymm below; Zmm in the
// AVX-512 file). `codes`: the block's code bytes at the register's first
// row (a ymm half: + 32 h); `fifth`: Q5_0's / Q5_1's mask of group 0 at the same
// row (+ 4 h), each next group's 8 bytes on.
template <WeightType T, typename Simd, typename F>
inline void for_each_group(const std::byte* codes, const std::byte* fifth, F f) {
    using Reg = typename Simd::Reg;
    if constexpr (T == WeightType::Q8_0) {
        for (std::size_t g = 0; g < kGroups; ++g)
            f(g, Simd::load(codes + g * kGroupBytes));
    } else {
        for (std::size_t k = 0; k < kGroups / 2; ++k) {
            const Reg v = Simd::load(codes + k * kGroupBytes);
            Reg lo = Simd::low_nibbles(v), hi = Simd::high_nibbles(v);
            if constexpr (has_fifth_bit(T)) {
                lo = Simd::add_fifth_bits(lo, fifth + k * sizeof(std::uint64_t));
                hi = Simd::add_fifth_bits(hi, fifth + (k + kGroups / 2) * sizeof(std::uint64_t));
            }
            if constexpr (is_table(T)) {
                lo = Simd::template table_codes<T>(lo);
                hi = Simd::template table_codes<T>(hi);
            }
            f(k, lo);
            f(k + kGroups / 2, hi);
        }
    }
}

struct Ymm {
    using Reg = __m256i;
    static Reg load(const std::byte* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }
    static Reg low_nibbles(Reg v) { return _mm256_and_si256(v, _mm256_set1_epi8(0x0F)); }
    static Reg high_nibbles(Reg v) { return low_nibbles(_mm256_srli_epi16(v, 4)); }
    // Sets bit 4 of byte i where bit i of the 32 bits at p is set.
    static Reg add_fifth_bits(Reg nibbles, const std::byte* p) {
        const __m256i spread = _mm256_shuffle_epi8(
            _mm256_set1_epi32(load_i32(p)),
            _mm256_set_epi64x(0x0303030303030303, 0x0202020202020202, 0x0101010101010101, 0));
        const __m256i bit = _mm256_set1_epi64x(static_cast<long long>(0x8040201008040201));
        const __m256i set = _mm256_cmpeq_epi8(_mm256_and_si256(spread, bit), bit);
        return _mm256_or_si256(nibbles, _mm256_and_si256(set, _mm256_set1_epi8(0x10)));
    }
    // code_table<T>()[i] for each byte i (0..15).
    template <WeightType T>
    static Reg table_codes(Reg nibbles) {
        return _mm256_shuffle_epi8(_mm256_broadcastsi128_si256(code_table<T>()), nibbles);
    }
    static Reg set32(std::int32_t v) { return _mm256_set1_epi32(v); }
    static Reg shl32(Reg v, int bits) { return _mm256_slli_epi32(v, bits); }
    static Reg shlv32(Reg v, Reg bits) { return _mm256_sllv_epi32(v, bits); }
    static Reg sub32(Reg a, Reg b) { return _mm256_sub_epi32(a, b); }
    static Reg min_u32(Reg a, Reg b) { return _mm256_min_epu32(a, b); }
    static Reg max_i32(Reg a, Reg b) { return _mm256_max_epi32(a, b); }
};

// The 8 rows' block scales at p as floats: f16 d, or MXFP4's E8M0 e.
template <WeightType T>
inline __m256 ymm_scales(const std::byte* p) {
    if constexpr (T == WeightType::MXFP4) {
        const __m256i e = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
        return _mm256_castsi256_ps(e8m0_half_bits<Ymm>(e));
    } else {
        return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    }
}

// Inputs i < N against one half of a tile. IntDot::start<T>(sum) is the
// int32 sums' start for an activation block with code sum `sum`;
// IntDot::dot<T>(acc, w, a) adds to each lane the 4 products of its
// unsigned codes w and signed codes a. The float operations per lane are
// the AVX-512 kernel's, in its order.
template <typename IntDot, WeightType T, std::size_t N>
void ymm_gemm_half(const std::byte* tile, const std::byte* act, std::size_t act_stride, std::size_t cols,
                   std::size_t h, float* y, std::size_t y_stride, std::size_t rows) {
    const std::size_t blocks = cols / kQuantBlockValues;
    const std::byte* scales = tile + scales_offset(T, cols) + h * kHalfRows * scale_size(T);
    const std::byte* mins = tile + mins_offset(T, cols) + h * kHalfRows * scale_size(T);
    const ActBlock32Sum* a[N];
    __m256 acc[N];
    for (std::size_t j = 0; j < N; ++j) {
        a[j] = reinterpret_cast<const ActBlock32Sum*>(act + j * act_stride);
        acc[j] = _mm256_setzero_ps();
    }
    for (std::size_t b = 0; b < blocks; ++b) {
        if (h == 0) // the second half finds the tile in cache
            prefetch_ahead<T>(tile, b);
        __m256i sums[N];
        for (std::size_t j = 0; j < N; ++j)
            sums[j] = IntDot::template start<T>(a[j][b].sum);
        const std::byte* block = tile + b * code_bytes(T);
        const std::byte* codes = block + h * kHalfBytes;
        const std::byte* fifth = block + kNibbleBytes + h * sizeof(std::uint32_t);
        for_each_group<T, Ymm>(codes, fifth, [&](std::size_t g, __m256i w) {
            for (std::size_t j = 0; j < N; ++j)
                sums[j] = IntDot::template dot<T>(sums[j], w,
                                                  _mm256_set1_epi32(load_i32(a[j][b].qs + g * kGroupValues)));
        });
        const __m256 dw = ymm_scales<T>(scales + b * scale_bytes(T));
        for (std::size_t j = 0; j < N; ++j)
            acc[j] = _mm256_fmadd_ps(_mm256_mul_ps(dw, _mm256_set1_ps(a[j][b].d)), _mm256_cvtepi32_ps(sums[j]),
                                     acc[j]);
        if constexpr (has_min(T)) {
            const __m256 m = ymm_scales<T>(mins + b * scale_bytes(T));
            for (std::size_t j = 0; j < N; ++j)
                acc[j] = _mm256_fmadd_ps(m, _mm256_set1_ps(a[j][b].s), acc[j]);
        }
    }
    const std::size_t first = h * kHalfRows, count = rows - first < kHalfRows ? rows - first : kHalfRows;
    for (std::size_t j = 0; j < N; ++j) {
        alignas(32) float out[kHalfRows];
        _mm256_store_ps(out, acc[j]);
        std::memcpy(y + j * y_stride + first, out, count * sizeof(float));
    }
}

template <typename IntDot, WeightType T, std::size_t N>
void ymm_gemm_n(const std::byte* tile, const std::byte* act, std::size_t act_stride, std::size_t cols, float* y,
                std::size_t y_stride, std::size_t rows) {
    for (std::size_t h = 0; h * kHalfRows < rows; ++h) // a half of zero rows is skipped
        ymm_gemm_half<IntDot, T, N>(tile, act, act_stride, cols, h, y, y_stride, rows);
}

template <typename IntDot, WeightType T>
void ymm_gemm(const std::byte* tile, const std::byte* act, std::size_t act_stride, std::size_t count,
              std::size_t cols, float* y, std::size_t y_stride, std::size_t rows) {
    static_assert(kYmmMaxInputs == 4);
    switch (count) {
    case 4: return ymm_gemm_n<IntDot, T, 4>(tile, act, act_stride, cols, y, y_stride, rows);
    case 3: return ymm_gemm_n<IntDot, T, 3>(tile, act, act_stride, cols, y, y_stride, rows);
    case 2: return ymm_gemm_n<IntDot, T, 2>(tile, act, act_stride, cols, y, y_stride, rows);
    default: return ymm_gemm_n<IntDot, T, 1>(tile, act, act_stride, cols, y, y_stride, rows);
    }
}

template <typename IntDot>
PackedGemmFn ymm_packed_gemm(WeightType type) {
    switch (type) {
    case WeightType::Q8_0: return {ymm_gemm<IntDot, WeightType::Q8_0>, kYmmMaxInputs};
    case WeightType::Q4_0: return {ymm_gemm<IntDot, WeightType::Q4_0>, kYmmMaxInputs};
    case WeightType::Q5_0: return {ymm_gemm<IntDot, WeightType::Q5_0>, kYmmMaxInputs};
    case WeightType::Q4_1: return {ymm_gemm<IntDot, WeightType::Q4_1>, kYmmMaxInputs};
    case WeightType::Q5_1: return {ymm_gemm<IntDot, WeightType::Q5_1>, kYmmMaxInputs};
    case WeightType::IQ4_NL: return {ymm_gemm<IntDot, WeightType::IQ4_NL>, kYmmMaxInputs};
    case WeightType::MXFP4: return {ymm_gemm<IntDot, WeightType::MXFP4>, kYmmMaxInputs};
    default: return {};
    }
}

} // namespace
} // namespace kvscope::kernels::cpu::detail::blocks32
#endif

// The AArch64 pieces: group decoding and the kernel of the NEON and SDOT
// files, which differ only in how 4 byte products become an int32 sum
// (the I8MM file has its own walk over the same decoding). A q register
// holds 4 rows' int32 lanes, so the kernels walk a tile as two 8-row
// halves, as the ymm kernels do: half h of group g is bytes
// [32 h, 32 h + 32) of its 64-byte line, quad i (rows 8 h + 4 i .. + 3)
// the 16 bytes at 32 h + 16 i.
#if defined(__ARM_NEON)
#include <arm_neon.h>

#include <array>
#include <cstring>
#include <type_traits>
#include <utility>

#include "kernels/cpu/activation_quant.h"

namespace kvscope::kernels::cpu::detail::blocks32 {
namespace {

inline constexpr std::size_t kNeonHalfRows = kPackedRows / 2;
inline constexpr std::size_t kNeonHalfBytes = kGroupBytes / 2;
inline constexpr std::size_t kQuads = kNeonHalfRows / 4; // q registers per half of a group

// Loops over inputs and quads carry "#pragma GCC unroll": GCC 12 keeps
// arrays of vectors in registers only when their loops are unrolled before
// its scalarization pass; otherwise it also stores them to the stack at
// every step (clang reads the pragma too).

// The code a kernel multiplies. Unsigned kernels (I8MM's USMMLA, like
// dpbusd) take the stored codes, offset code_offset(T); signed ones (SDOT,
// SMULL) take Q8_0's code ^ 0x80 and the tables' values themselves, offset
// 0, and the nibble types' codes as they are (0..31 are valid signed
// bytes). Either way a block's int32 sum starts at -offset x the
// activation sum and ends at the same exact integer.
template <WeightType T, bool Unsigned>
constexpr std::int32_t neon_offset() {
    return Unsigned || (T != WeightType::Q8_0 && !is_table(T)) ? code_offset(T) : 0;
}

// A table type's codes (is_table) for a kernel: its values + neon_offset.
template <WeightType T, bool Unsigned>
inline constexpr std::array<std::uint8_t, 16> kNeonTable = [] {
    const std::int8_t* values = T == WeightType::MXFP4 ? kMxfp4Values : kIq4nlValues;
    std::array<std::uint8_t, 16> table{};
    for (std::size_t i = 0; i < 16; ++i)
        table[i] = static_cast<std::uint8_t>(values[i] + neon_offset<T, Unsigned>());
    return table;
}();

// Sets bit 4 of each code of quad i whose fifth bit is set: `bits` holds
// the half's 32 bits of the group's mask (bit 4 r + j: row 8 h + r, value
// j) in every int32 lane; quad i's are its bytes 2 i and 2 i + 1, one per
// 8 codes: spread to the codes' bytes, each byte's own bit shifted to bit
// 4 and selected in.
inline uint8x16_t add_fifth_bits(uint8x16_t nibbles, uint8x16_t bits, std::size_t i) {
    static constexpr std::uint8_t spread_index[kQuads][16] = {{0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1},
                                                              {2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3}};
    static constexpr std::int8_t to_bit4[16] = {4, 3, 2, 1, 0, -1, -2, -3, 4, 3, 2, 1, 0, -1, -2, -3};
    const uint8x16_t spread = vqtbl1q_u8(bits, vld1q_u8(spread_index[i]));
    return vbslq_u8(vdupq_n_u8(0x10), vshlq_u8(spread, vld1q_s8(to_bit4)), nibbles);
}

inline uint8x16_t half_fifth_bits(const std::byte* p) {
    std::uint32_t bits;
    std::memcpy(&bits, p, sizeof bits);
    return vreinterpretq_u8_u32(vdupq_n_u32(bits));
}

// Code bytes of quad i of group (Q4_0: line) g of a block, as stored.
inline uint8x16_t load_quad(const std::byte* codes, std::size_t g, std::size_t i) {
    return vld1q_u8(reinterpret_cast<const std::uint8_t*>(codes + g * kGroupBytes) + 16 * i);
}

// The two groups of nibble bytes v (Q4_0's line k: groups k and k + 4).
inline void split_nibbles(uint8x16_t v, uint8x16_t& lo, uint8x16_t& hi) {
    lo = vandq_u8(v, vdupq_n_u8(0x0F));
    hi = vshrq_n_u8(v, 4);
}

// A table type's (is_table) codes of nibbles (0..15).
template <WeightType T, bool Unsigned>
inline uint8x16_t table_codes(uint8x16_t nibbles) {
    return vqtbl1q_u8(vld1q_u8(kNeonTable<T, Unsigned>.data()), nibbles);
}

// Quad i of groups k and k + 4 (k = 0..3) of a block, decoded to the
// kernel's codes: `codes` is the block's code bytes at the half's first
// row (+ 32 h), `fifth` Q5_0's / Q5_1's mask of group 0 at the same row
// (+ 4 h), each next group's 8 bytes on. Q4_0's line k holds both groups.
template <WeightType T, bool Unsigned>
inline void decode_quad(const std::byte* codes, const std::byte* fifth, std::size_t k, std::size_t i, uint8x16_t& lo,
                        uint8x16_t& hi) {
    if constexpr (T == WeightType::Q8_0) {
        lo = load_quad(codes, k, i);
        hi = load_quad(codes, k + kGroups / 2, i);
        if constexpr (!Unsigned) {
            lo = veorq_u8(lo, vdupq_n_u8(0x80));
            hi = veorq_u8(hi, vdupq_n_u8(0x80));
        }
    } else {
        split_nibbles(load_quad(codes, k, i), lo, hi);
        if constexpr (has_fifth_bit(T)) {
            lo = add_fifth_bits(lo, half_fifth_bits(fifth + k * sizeof(std::uint64_t)), i);
            hi = add_fifth_bits(hi, half_fifth_bits(fifth + (k + kGroups / 2) * sizeof(std::uint64_t)), i);
        }
        if constexpr (is_table(T)) {
            lo = table_codes<T, Unsigned>(lo);
            hi = table_codes<T, Unsigned>(hi);
        }
    }
}

// Calls f(k, lo, hi) for k = 0..3 (a std::integral_constant: lane
// operands need constants) with quad i of groups k and k + 4 of a block's
// half.
template <WeightType T, bool Unsigned, typename F>
inline void for_each_line(const std::byte* codes, const std::byte* fifth, std::size_t i, F f) {
    const auto line = [&]<std::size_t K>(std::integral_constant<std::size_t, K> k) {
        uint8x16_t lo, hi;
        decode_quad<T, Unsigned>(codes, fifth, K, i, lo, hi);
        f(k, lo, hi);
    };
    [&]<std::size_t... K>(std::index_sequence<K...>) {
        (line(std::integral_constant<std::size_t, K>{}), ...);
    }(std::make_index_sequence<kGroups / 2>());
}

// int32x4 operations for e8m0_half_bits.
struct NeonS32 {
    using Reg = int32x4_t;
    static Reg set32(std::int32_t v) { return vdupq_n_s32(v); }
    static Reg shl32(Reg v, int bits) { return vshlq_s32(v, vdupq_n_s32(bits)); }
    static Reg shlv32(Reg v, Reg bits) { return vshlq_s32(v, bits); }
    static Reg sub32(Reg a, Reg b) { return vsubq_s32(a, b); }
    static Reg min_u32(Reg a, Reg b) {
        return vreinterpretq_s32_u32(vminq_u32(vreinterpretq_u32_s32(a), vreinterpretq_u32_s32(b)));
    }
    static Reg max_i32(Reg a, Reg b) { return vmaxq_s32(a, b); }
};

// The 8 rows' block scales at p as floats, quad by quad: f16 d (or m),
// or MXFP4's E8M0 e.
template <WeightType T>
inline void half_scales(const std::byte* p, float32x4_t (&out)[kQuads]) {
    if constexpr (T == WeightType::MXFP4) {
        const uint16x8_t e = vmovl_u8(vld1_u8(reinterpret_cast<const std::uint8_t*>(p)));
        out[0] = vreinterpretq_f32_s32(e8m0_half_bits<NeonS32>(vreinterpretq_s32_u32(vmovl_u16(vget_low_u16(e)))));
        out[1] = vreinterpretq_f32_s32(e8m0_half_bits<NeonS32>(vreinterpretq_s32_u32(vmovl_high_u16(e))));
    } else {
        const float16x8_t d = vld1q_f16(reinterpret_cast<const float16_t*>(p));
        out[0] = vcvt_f32_f16(vget_low_f16(d));
        out[1] = vcvt_high_f32_f16(d);
    }
}

// The first `count` of 8 rows' outputs.
inline void store_half(float* y, const float32x4_t (&v)[kQuads], std::size_t count) {
    if (count == kNeonHalfRows) {
        vst1q_f32(y, v[0]);
        vst1q_f32(y + 4, v[1]);
        return;
    }
    float out[kNeonHalfRows];
    vst1q_f32(out, v[0]);
    vst1q_f32(out + 4, v[1]);
    std::memcpy(y, out, count * sizeof(float));
}

// Inputs i < N against one half of a tile, each input's int32 sums in
// the rows' lanes, a quad of 4 rows at a time (only that quad's sums are
// live: the registers go to more inputs). Dot::Acc holds one input's sums
// of a quad and block; Dot::start(init) begins them at `init`;
// Dot::line<K>(acc, lo, hi, x) adds groups K (lo) and K + 4 (hi) against
// the input's codes x[0] (values 0..15), x[1] (16..31); Dot::total(acc)
// is the int32x4 of sums. The float operations per lane are the x86
// kernels', in their order: acc = fma(d_w x d_x, float(sum), acc), then
// Q4_1/Q5_1's acc = fma(m, s_x, acc).
template <typename Dot, WeightType T, std::size_t N>
void lanes_gemm_half(const std::byte* tile, const std::byte* act, std::size_t act_stride, std::size_t cols,
                     std::size_t h, float* y, std::size_t y_stride, std::size_t rows) {
    constexpr bool kUnsigned = false;
    const std::size_t blocks = cols / kQuantBlockValues;
    const std::byte* scales = tile + scales_offset(T, cols) + h * kNeonHalfRows * scale_size(T);
    const std::byte* mins = tile + mins_offset(T, cols) + h * kNeonHalfRows * scale_size(T);
    const ActBlock32Sum* a[N];
    float32x4_t acc[N][kQuads];
#pragma GCC unroll 8
    for (std::size_t j = 0; j < N; ++j) {
        a[j] = reinterpret_cast<const ActBlock32Sum*>(act + j * act_stride);
        acc[j][0] = acc[j][1] = vdupq_n_f32(0.0f);
    }
    for (std::size_t b = 0; b < blocks; ++b) {
        if (h == 0) // the second half finds the tile in cache
            prefetch_ahead<T>(tile, b);
        int8x16_t x[N][2];
#pragma GCC unroll 8
        for (std::size_t j = 0; j < N; ++j) {
            x[j][0] = vld1q_s8(a[j][b].qs);
            x[j][1] = vld1q_s8(a[j][b].qs + 16);
        }
        const std::byte* block = tile + b * code_bytes(T);
        float32x4_t dw[kQuads], m[kQuads];
        half_scales<T>(scales + b * scale_bytes(T), dw);
        if constexpr (has_min(T))
            half_scales<T>(mins + b * scale_bytes(T), m);
#pragma GCC unroll 2
        for (std::size_t i = 0; i < kQuads; ++i) {
            typename Dot::Acc sums[N];
#pragma GCC unroll 8
            for (std::size_t j = 0; j < N; ++j)
                sums[j] = Dot::start(-neon_offset<T, kUnsigned>() * a[j][b].sum);
            for_each_line<T, kUnsigned>(block + h * kNeonHalfBytes, block + kNibbleBytes + h * sizeof(std::uint32_t), i,
                                        [&]<std::size_t K>(std::integral_constant<std::size_t, K>, uint8x16_t lo,
                                                           uint8x16_t hi) {
#pragma GCC unroll 8
                                            for (std::size_t j = 0; j < N; ++j)
                                                Dot::template line<K>(sums[j], lo, hi, x[j]);
                                        });
#pragma GCC unroll 8
            for (std::size_t j = 0; j < N; ++j) {
                acc[j][i] = vfmaq_f32(acc[j][i], vmulq_n_f32(dw[i], a[j][b].d), vcvtq_f32_s32(Dot::total(sums[j])));
                if constexpr (has_min(T))
                    acc[j][i] = vfmaq_n_f32(acc[j][i], m[i], a[j][b].s);
            }
        }
    }
    const std::size_t first = h * kNeonHalfRows, count = rows - first < kNeonHalfRows ? rows - first : kNeonHalfRows;
#pragma GCC unroll 8
    for (std::size_t j = 0; j < N; ++j)
        store_half(y + j * y_stride + first, acc[j], count);
}

// Calls Half::template run<N>(tile, act, act_stride, cols, h, y, y_stride,
// rows) for each half with real rows, N = count (1..MaxInputs).
template <typename Half, std::size_t MaxInputs>
void neon_gemm(const std::byte* tile, const std::byte* act, std::size_t act_stride, std::size_t count,
               std::size_t cols, float* y, std::size_t y_stride, std::size_t rows) {
    [&]<std::size_t... I>(std::index_sequence<I...>) {
        using Fn = void (*)(const std::byte*, const std::byte*, std::size_t, std::size_t, std::size_t, float*,
                            std::size_t, std::size_t);
        static constexpr Fn by_count[] = {Half::template run<I + 1>...};
        for (std::size_t h = 0; h * kNeonHalfRows < rows; ++h) // a half of zero rows is skipped
            by_count[count - 1](tile, act, act_stride, cols, h, y, y_stride, rows);
    }(std::make_index_sequence<MaxInputs>());
}

// Half<T> for each type, Half<T>::run<N> being one half's kernel.
template <template <WeightType> class Half, std::size_t MaxInputs>
PackedGemmFn neon_packed_gemm_of(WeightType type) {
    switch (type) {
    case WeightType::Q8_0: return {neon_gemm<Half<WeightType::Q8_0>, MaxInputs>, MaxInputs};
    case WeightType::Q4_0: return {neon_gemm<Half<WeightType::Q4_0>, MaxInputs>, MaxInputs};
    case WeightType::Q5_0: return {neon_gemm<Half<WeightType::Q5_0>, MaxInputs>, MaxInputs};
    case WeightType::Q4_1: return {neon_gemm<Half<WeightType::Q4_1>, MaxInputs>, MaxInputs};
    case WeightType::Q5_1: return {neon_gemm<Half<WeightType::Q5_1>, MaxInputs>, MaxInputs};
    case WeightType::IQ4_NL: return {neon_gemm<Half<WeightType::IQ4_NL>, MaxInputs>, MaxInputs};
    case WeightType::MXFP4: return {neon_gemm<Half<WeightType::MXFP4>, MaxInputs>, MaxInputs};
    default: return {};
    }
}

// The lanes kernel with Dot for type T.
template <typename Dot>
struct LanesHalf {
    template <WeightType T>
    struct Of {
        template <std::size_t N>
        static void run(const std::byte* tile, const std::byte* act, std::size_t act_stride, std::size_t cols,
                        std::size_t h, float* y, std::size_t y_stride, std::size_t rows) {
            lanes_gemm_half<Dot, T, N>(tile, act, act_stride, cols, h, y, y_stride, rows);
        }
    };
};

#if defined(__ARM_FEATURE_DOTPROD)
// The lanes kernel's Dot with SDOT by element (files compiled with
// +dotprod: the SDOT tiles, and the I8MM ones for a single input).
struct SdotDot {
    using Acc = int32x4_t;
    static Acc start(std::int32_t init) { return vdupq_n_s32(init); }
    template <std::size_t K>
    static void line(Acc& acc, uint8x16_t lo, uint8x16_t hi, const int8x16_t (&x)[2]) {
        acc = vdotq_laneq_s32(acc, vreinterpretq_s8_u8(lo), x[0], K);
        acc = vdotq_laneq_s32(acc, vreinterpretq_s8_u8(hi), x[1], K);
    }
    static int32x4_t total(Acc acc) { return acc; }
};
#endif

} // namespace
} // namespace kvscope::kernels::cpu::detail::blocks32
#endif
