// Internal to the attention kernels: the vector operations on one KV row
// (head_dim values in any KV format, decoded with their scales on the fly
// at an unaligned byte address), per SIMD path.
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

// For H = 1..kSharedHeads query heads (index H - 1), with head h's query
// or accumulator at offset h * n: out[h] = q_h . row, and acc_h += a[h] *
// row. `scales` is what the row's format needs (kv_codes.h): nothing, the
// f32 head scale (fp8), the row's f16 scale (int8), its group pairs, or the
// block's channel scales (KIVI K).
using KvDotFn = void (*)(const float* q, const std::byte* row, const std::byte* scales, std::size_t n, float* out);
using KvAxpyFn = void (*)(const float* a, const std::byte* row, const std::byte* scales, float* acc, std::size_t n);

struct KvRowOps {
    KvDotFn dot[kSharedHeads];
    KvAxpyFn axpy[kSharedHeads];
};

KvRowOps scalar_kv_row_ops(RowCode code);
#if defined(KVSCOPE_KERNELS_AVX2)
KvRowOps avx2_kv_row_ops(RowCode code);
#endif

// How K rows and V rows of a format decode.
RowCode k_row_code(KvElem elem);
RowCode v_row_code(KvElem elem);

KvRowOps kv_row_ops(RowCode code, SimdPath path);

} // namespace kvscope::kernels::cpu::detail
