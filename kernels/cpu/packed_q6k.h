// Internal to the Q6_K tile kernels (packed_q6k*.cpp): the tile layout
// every instruction set's kernel reads, and the kernels. packed_q6k.cpp
// draws the layout and packs it; packed_kernel.h says what a tile is.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>
#if defined(__AVX2__)
#include <immintrin.h>
#endif
#if defined(__ARM_NEON)
#include <arm_neon.h>
#endif

#include "kernels/cpu/activation_quant.h"
#include "kernels/cpu/packed_kernel.h"

namespace kvscope::kernels::cpu::detail {

// One super-block (256 columns) of a 16-row tile; the tile is cols / 256 of
// them in column order. Each is 53 cache lines, so every load is aligned.
// Byte offsets within a super-block (packed_q6k.cpp draws it):
inline constexpr std::size_t kQ6kD = 0;                   // d: float[16], by row
inline constexpr std::size_t kQ6kScales = 64;             // int8 [16 sub-blocks][16 rows]
inline constexpr std::size_t kQ6kCodes = 64 + 16 * 16;    // 16 sub-blocks of codes
inline constexpr std::size_t kQ6kSubBytes = 3 * 64;       // L0, L1, H of one sub-block
inline constexpr std::size_t kQ6kSuperBytes = kQ6kCodes + 16 * kQ6kSubBytes; // 3392
// Byte 4 r + j of each 64-byte part of a sub-block s holds row r's codes
// for columns 16 s + 4 k + j (k = 0..3, the four dpbusd groups):
//   L0: k = 0 low nibble | k = 1 low nibble << 4
//   L1: k = 2 low nibble | k = 3 low nibble << 4
//   H:  high bits (code >> 4) of k = 2 at bits 0-1, k = 3 at 2-3,
//       k = 0 at 4-5, k = 1 at 6-7
// so H & 0x33 and (H >> 2) & 0x33 each hold two groups' high bits with a
// zero pair above each (packed_q6k_avx512.cpp's decode).
inline constexpr std::size_t kQ6kL1 = 64, kQ6kH = 128;

// Output of every kernel, on every instruction set, per row and input:
//   total = sum over sub-blocks s of sc[s] * (sum of q * a - 32 * bsums[s])
// exactly in int32, then per super-block acc = fma(float(total), d * a.d,
// acc), starting from acc = 0.
inline constexpr std::size_t kQ6kMaxInputs512 = 8; // 8 x 2 accumulators of 32 zmm
inline constexpr std::size_t kQ6kMaxInputs256 = 4; // 4 x 2 of 16 ymm, per 8-row half
inline constexpr std::size_t kQ6kMaxInputsNeon = 8; // 8 x 2 of 32 q registers, per 4-row pass

// How far ahead of the sub-block being decoded its lines are prefetched:
// past the tile's end that is the next tile, which matmul takes next for
// one input. Out of cache (one input, a 64 MiB matrix) 8 KiB ahead was
// 10-45% faster than none on the 2-core VM (noisy: other builds running).
inline constexpr std::size_t kQ6kPrefetchAhead = 8192;

// The kernels' shared pieces have internal linkage (the unnamed namespace):
// each instruction set's file compiles its own copy, and the linker must
// not hand one file's copy (AVX-512 code, say) to another's kernel.
namespace {

// a[i]: super-block b of input i (activation rows act_stride bytes apart).
template <std::size_t N>
void q6k_inputs_at(const std::byte* act, std::size_t act_stride, std::size_t b, const ActBlock256* (&a)[N]) {
    for (std::size_t i = 0; i < N; ++i)
        a[i] = reinterpret_cast<const ActBlock256*>(act + i * act_stride) + b;
}

#if defined(__AVX2__)
// Asks for the 3 lines of the sub-block kQ6kPrefetchAhead after `sub`.
inline void q6k_prefetch(const std::uint8_t* sub) {
    for (std::size_t line = 0; line < kQ6kSubBytes; line += 64)
        _mm_prefetch(reinterpret_cast<const char*>(sub + kQ6kPrefetchAhead + line), _MM_HINT_T0);
}

// The 4 code vectors (column groups k = 0..3) of sub-block `sub` for rows
// 8 half .. 8 half + 7, as the ymm kernels read them: 17 ALU ops.
struct Q6kCodes256 {
    __m256i w[4];
};
inline Q6kCodes256 q6k_decode256(const std::uint8_t* sub, std::size_t half) {
    const __m256i nibble = _mm256_set1_epi8(0x0F), high = _mm256_set1_epi8(0x30);
    const auto load = [&](std::size_t part) {
        return _mm256_load_si256(reinterpret_cast<const __m256i*>(sub + part + 32 * half));
    };
    const __m256i l0 = load(0), l1 = load(kQ6kL1), h = load(kQ6kH);
    const auto code = [&](__m256i low, __m256i high_bits) {
        return _mm256_or_si256(_mm256_and_si256(low, nibble), _mm256_and_si256(high_bits, high));
    };
    return {{code(l0, h), code(_mm256_srli_epi16(l0, 4), _mm256_srli_epi16(h, 2)), code(l1, _mm256_slli_epi16(h, 4)),
             code(_mm256_srli_epi16(l1, 4), _mm256_slli_epi16(h, 2))}};
}

inline __m256i q6k_broadcast4(const std::int8_t* q) {
    std::int32_t v;
    std::memcpy(&v, q, sizeof v);
    return _mm256_set1_epi32(v);
}

// Stores the first `rows` (0..8) lanes of v at y.
inline void q6k_store_rows(float* y, __m256 v, std::size_t rows) {
    alignas(32) float lanes[8];
    _mm256_store_ps(lanes, v);
    for (std::size_t r = 0; r < rows; ++r)
        y[r] = lanes[r];
}

// The walk of the ymm kernels: each 8-row half of the tile in turn, and
// per super-block, add_super(super, half, a, total) sets the N inputs'
// exact totals (a[i]: input i's block), turned into floats as
// packed_q6k.h says.
template <std::size_t N, class AddSuper>
void q6k_gemm256(const std::byte* tile, const std::byte* act, std::size_t act_stride, std::size_t cols, float* y,
                 std::size_t y_stride, std::size_t rows, const AddSuper& add_super) {
    for (std::size_t half = 0; 8 * half < rows; ++half) {
        __m256 acc[N];
        for (std::size_t i = 0; i < N; ++i)
            acc[i] = _mm256_setzero_ps();
        for (std::size_t b = 0; b < cols / kActSuperValues; ++b) {
            const auto* super = reinterpret_cast<const std::uint8_t*>(tile) + b * kQ6kSuperBytes;
            const ActBlock256* a[N];
            q6k_inputs_at(act, act_stride, b, a);
            __m256i total[N];
            add_super(super, half, a, total);
            const __m256 d = _mm256_load_ps(reinterpret_cast<const float*>(super + kQ6kD) + 8 * half);
            for (std::size_t i = 0; i < N; ++i)
                acc[i] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(total[i]), _mm256_mul_ps(d, _mm256_set1_ps(a[i]->d)),
                                         acc[i]);
        }
        for (std::size_t i = 0; i < N; ++i)
            q6k_store_rows(y + i * y_stride + 8 * half, acc[i], std::min<std::size_t>(8, rows - 8 * half));
    }
}
#endif

// call(std::integral_constant<std::size_t, count>{}) for count in 1..Max:
// the kernels hold each input's sums in registers, so they are compiled
// for each count.
template <std::size_t Max, class Call>
void q6k_with_count(std::size_t count, const Call& call) {
    [&]<std::size_t... I>(std::index_sequence<I...>) {
        (void)((count == I + 1 && (call(std::integral_constant<std::size_t, I + 1>{}), true)) || ...);
    }(std::make_index_sequence<Max>{});
}

// Each sub-block's sum of input i starts at offset[i][s] = -32 * bsums[s]
// (Q6_K's offset of 32), broadcast from memory into the dpbusd chain.
template <std::size_t N>
void q6k_offsets(const ActBlock256* const (&a)[N], std::int32_t (&offset)[N][16]) {
    for (std::size_t i = 0; i < N; ++i)
        for (std::size_t s = 0; s < 16; ++s)
            offset[i][s] = -32 * a[i]->bsums[s];
}

#if defined(__ARM_NEON)
// The 4 code vectors (column groups k = 0..3) of sub-block `sub` for rows
// 4 pass .. 4 pass + 3, as the NEON kernels read them (16 bytes of each
// part): 15 ALU ops.
struct Q6kCodesNeon {
    int8x16_t w[4];
};
inline Q6kCodesNeon q6k_decode_neon(const std::uint8_t* sub, std::size_t pass) {
    const uint8x16_t nibble = vdupq_n_u8(0x0F), high = vdupq_n_u8(0x30);
    const uint8x16_t l0 = vld1q_u8(sub + 16 * pass), l1 = vld1q_u8(sub + kQ6kL1 + 16 * pass);
    const uint8x16_t h = vld1q_u8(sub + kQ6kH + 16 * pass);
    const auto code = [&](uint8x16_t low, uint8x16_t high_bits) {
        return vreinterpretq_s8_u8(vorrq_u8(low, vandq_u8(high_bits, high)));
    };
    return {{code(vandq_u8(l0, nibble), h), code(vshrq_n_u8(l0, 4), vshrq_n_u8(h, 2)),
             code(vandq_u8(l1, nibble), vshlq_n_u8(h, 4)), code(vshrq_n_u8(l1, 4), vshlq_n_u8(h, 2))}};
}

// The NEON kernels' walk: each 4-row pass of the tile in turn, N inputs.
// Per sub-block and input, Dot::add(sum, codes, q) adds the dot products
// of the 4 code vectors with the input's 16 codes at q to the sum (which
// starts at -32 x bsums); the exact sums times the rows' scales make the
// super-block's total, turned into floats as this header says.
template <std::size_t N, class Dot>
void q6k_walk_neon(const std::byte* tile, const std::byte* act, std::size_t act_stride, std::size_t cols, float* y,
                   std::size_t y_stride, std::size_t rows) {
    for (std::size_t pass = 0; 4 * pass < rows; ++pass) {
        float32x4_t acc[N];
        for (std::size_t i = 0; i < N; ++i)
            acc[i] = vdupq_n_f32(0.0f);
        for (std::size_t b = 0; b < cols / kActSuperValues; ++b) {
            const auto* super = reinterpret_cast<const std::uint8_t*>(tile) + b * kQ6kSuperBytes;
            const ActBlock256* a[N];
            q6k_inputs_at(act, act_stride, b, a);
            std::int32_t offset[N][16];
            q6k_offsets(a, offset);
            int32x4_t total[N];
            for (std::size_t i = 0; i < N; ++i)
                total[i] = vdupq_n_s32(0);
            for (std::size_t s = 0; s < 16; ++s) {
                const std::uint8_t* sub = super + kQ6kCodes + s * kQ6kSubBytes;
                for (std::size_t line = 0; line < kQ6kSubBytes; line += 64)
                    __builtin_prefetch(sub + kQ6kPrefetchAhead + line);
                const Q6kCodesNeon c = q6k_decode_neon(sub, pass);
                std::int32_t sc4;
                std::memcpy(&sc4, super + kQ6kScales + 16 * s + 4 * pass, sizeof sc4);
                const int32x4_t sc = vmovl_s16(vget_low_s16(vmovl_s8(vcreate_s8(static_cast<std::uint32_t>(sc4)))));
                for (std::size_t i = 0; i < N; ++i) {
                    const int32x4_t sum = Dot::add(vdupq_n_s32(offset[i][s]), c, a[i]->qs + 16 * s);
                    total[i] = vmlaq_s32(total[i], sum, sc);
                }
            }
            const float32x4_t d = vld1q_f32(reinterpret_cast<const float*>(super + kQ6kD) + 4 * pass);
            for (std::size_t i = 0; i < N; ++i)
                acc[i] = vfmaq_f32(acc[i], vcvtq_f32_s32(total[i]), vmulq_f32(d, vdupq_n_f32(a[i]->d)));
        }
        const std::size_t valid = std::min<std::size_t>(4, rows - 4 * pass);
        for (std::size_t i = 0; i < N; ++i) {
            float lanes[4];
            vst1q_f32(lanes, acc[i]);
            std::memcpy(y + i * y_stride + 4 * pass, lanes, valid * sizeof(float));
        }
    }
}
#endif

} // namespace

#if defined(KVSCOPE_KERNELS_AVX512VNNI)
void q6k_gemm_avx512(const std::byte* tile, const std::byte* act, std::size_t act_stride, std::size_t count,
                     std::size_t cols, float* y, std::size_t y_stride, std::size_t rows);
#endif
#if defined(KVSCOPE_KERNELS_AVXVNNI)
void q6k_gemm_avxvnni(const std::byte* tile, const std::byte* act, std::size_t act_stride, std::size_t count,
                      std::size_t cols, float* y, std::size_t y_stride, std::size_t rows);
#endif
#if defined(KVSCOPE_KERNELS_NEON)
void q6k_gemm_neon(const std::byte* tile, const std::byte* act, std::size_t act_stride, std::size_t count,
                   std::size_t cols, float* y, std::size_t y_stride, std::size_t rows);
#endif
#if defined(KVSCOPE_KERNELS_NEON_DOTPROD)
void q6k_gemm_neondot(const std::byte* tile, const std::byte* act, std::size_t act_stride, std::size_t count,
                      std::size_t cols, float* y, std::size_t y_stride, std::size_t rows);
#endif
#if defined(KVSCOPE_KERNELS_AVX2)
void q6k_gemm_avx2(const std::byte* tile, const std::byte* act, std::size_t act_stride, std::size_t count,
                   std::size_t cols, float* y, std::size_t y_stride, std::size_t rows);
#endif

} // namespace kvscope::kernels::cpu::detail
