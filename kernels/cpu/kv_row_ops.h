// Internal to the attention kernels: the vector operations on a run of
// consecutive KV rows of one block (head_dim values each, in any KV format,
// decoded with their scales on the fly at unaligned byte addresses), per
// SIMD path, and the softmax of a decode step's scores. One call per block
// rather than per row: the AVX2 versions keep several rows' dot products in
// flight at once and keep the weighted sum's accumulators in registers
// across the block's rows.
#pragma once

#include <cstddef>
#include <utility>

#include "kernels/cpu/kv_codes.h"
#include "kernels/cpu/paged_kv.h"
#include "kernels/cpu/simd_path.h"

namespace kvscope::kernels::cpu::detail {

// Query heads that share one decoded KV row: the query heads of a
// grouped-query KV head are taken up to this many at a time, so that a row
// is loaded and decoded once for all of them.
constexpr std::size_t kSharedHeads = 4;

// `count` rows, row r at first + r * stride, with what its format needs
// (kv_codes.h) at scales + r * scale_stride: nothing, the f32 head scale
// (fp8), the row's f16 scale (int8), its group pairs, or the block's
// channel scales (KIVI K, scale_stride 0).
struct KvRows {
    const std::byte* first;
    std::size_t stride;
    const std::byte* scales;
    std::size_t scale_stride;
    std::size_t count;
};

// For H = 1..kSharedHeads query heads (index H - 1), with head h's query
// or accumulator at offset h * n (n = head_dim):
//   dot:  out[h * out_stride + r] = q_h . row_r
//   axpy: acc_h += sum over r of w[h * w_stride + r] * row_r, row by row
// Each row's result is bit-identical whatever count and position the row
// has in the run: a score does not depend on where a block ends.
using KvDotFn = void (*)(const float* q, const KvRows& rows, std::size_t n, float* out, std::size_t out_stride);
using KvAxpyFn = void (*)(const float* w, std::size_t w_stride, const KvRows& rows, float* acc, std::size_t n);
// decode: out[r * out_stride + i] = value i of row r, i < n: the rows as
// floats, for the prompt kernel, which decodes a row once for a tile of
// queries rather than once per query.
using KvDecodeFn = void (*)(const KvRows& rows, std::size_t n, float* out, std::size_t out_stride);

struct KvRowOps {
    KvDotFn dot[kSharedHeads];
    KvAxpyFn axpy[kSharedHeads];
    KvDecodeFn decode;
};

KvRowOps scalar_kv_row_ops(RowCode code);
#if defined(KVSCOPE_KERNELS_AVX2)
KvRowOps avx2_kv_row_ops(RowCode code);
#endif
#if defined(KVSCOPE_KERNELS_NEON)
KvRowOps neon_kv_row_ops(RowCode code);
#endif

// A decode span's softmax numerators for one query head: each of the
// `count` (>= 1) dot products becomes its score s = dot * scale (softcap
// > 0: s = softcap * tanh(dot * scale)), then exp(s - m), m the largest
// score, which goes to *max; the sum of the results is returned.
// `scores` must have room for count rounded up to 8 floats: the AVX2 and
// NEON versions work in whole 8-float steps and leave zeros past count.
using SoftmaxRowFn = float (*)(float* scores, std::size_t count, float scale, float softcap, float* max);

float scalar_softmax_row(float* scores, std::size_t count, float scale, float softcap, float* max);
#if defined(KVSCOPE_KERNELS_AVX2)
float avx2_softmax_row(float* scores, std::size_t count, float scale, float softcap, float* max);
#endif
#if defined(KVSCOPE_KERNELS_NEON)
float neon_softmax_row(float* scores, std::size_t count, float scale, float softcap, float* max);
#endif

SoftmaxRowFn softmax_row(SimdPath path);

// The write side of F16 rows: n floats stored as f16 at `row` (unaligned),
// rounded to nearest even, bit-identical on every path (float16_encode.h).
using F16StoreFn = void (*)(const float* src, std::size_t n, std::byte* row);
void scalar_store_f16_row(const float* src, std::size_t n, std::byte* row);
#if defined(KVSCOPE_KERNELS_AVX2)
void avx2_store_f16_row(const float* src, std::size_t n, std::byte* row);
#endif
#if defined(KVSCOPE_KERNELS_NEON)
void neon_store_f16_row(const float* src, std::size_t n, std::byte* row);
#endif
F16StoreFn store_f16_row(SimdPath path);

// How K rows and V rows of a format decode.
RowCode k_row_code(KvElem elem);
RowCode v_row_code(KvElem elem);

KvRowOps kv_row_ops(RowCode code, SimdPath path);

namespace { // internal linkage: compiled into the AVX2 file too (kv_codes.h)

// acc_h += w[h * w_stride + r] * row_r over values [from, n) of each row,
// one value at a time, rows in order: the portable axpy (from 0) and the
// AVX2 one's last n % 8 values.
template <RowCode Code, std::size_t H>
void axpy_values(const float* w, std::size_t w_stride, const KvRows& rows, std::size_t from, float* acc,
                 std::size_t n) {
    for (std::size_t r = 0; r < rows.count; ++r) {
        const std::byte* row = rows.first + r * rows.stride;
        const std::byte* scales = rows.scales + r * rows.scale_stride;
        for (std::size_t i = from; i < n; ++i) {
            const float x = decode_value<Code>(row, scales, i, n);
            for (std::size_t h = 0; h < H; ++h)
                acc[h * n + i] += w[h * w_stride + r] * x;
        }
    }
}

} // namespace
} // namespace kvscope::kernels::cpu::detail
