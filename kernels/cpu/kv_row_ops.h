// Internal to the attention kernels: the vector operations on one KV row
// (head_dim values of f32 or f16 at an unaligned byte address), per SIMD
// path.
#pragma once

#include <cstddef>

#include "kernels/cpu/paged_kv.h"
#include "kernels/cpu/simd_path.h"

namespace kvscope::kernels::cpu::detail {

struct KvRowOps {
    float (*dot)(const float* q, const std::byte* row, std::size_t n);          // q . row
    void (*axpy)(float a, const std::byte* row, float* acc, std::size_t n);     // acc += a * row
    void (*store)(const float* src, std::byte* row, std::size_t n);             // row = src
};

KvRowOps scalar_kv_row_ops(KvElem elem);
#if defined(KVSCOPE_KERNELS_AVX2)
KvRowOps avx2_kv_row_ops(KvElem elem);
#endif

KvRowOps kv_row_ops(KvElem elem, SimdPath path);

} // namespace kvscope::kernels::cpu::detail
