// Internal to the attention kernels: the vector operations on one KV row
// (head_dim values in any KV format, decoded with their scales on the fly
// at an unaligned byte address), per SIMD path.
#pragma once

#include <cstddef>

#include "kernels/cpu/kv_codes.h"
#include "kernels/cpu/paged_kv.h"
#include "kernels/cpu/simd_path.h"

namespace kvscope::kernels::cpu::detail {

// `scales` is what the row's format needs (kv_codes.h): nothing, the f32
// head scale (fp8), the row's f16 scale (int8), its group pairs, or the
// block's channel scales (KIVI K).
struct KvRowOps {
    float (*dot)(const float* q, const std::byte* row, const std::byte* scales, std::size_t n); // q . row
    void (*axpy)(float a, const std::byte* row, const std::byte* scales, float* acc, std::size_t n); // acc += a * row
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
