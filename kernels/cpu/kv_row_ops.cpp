// Portable KV row operations, and the choice between them and AVX2's.
#include "kernels/cpu/kv_row_ops.h"

#include <cstdint>
#include <cstring>

#include "kernels/cpu/float16.h"
#include "kernels/cpu/float16_encode.h"

namespace kvscope::kernels::cpu::detail {
namespace {

float load_f32(const std::byte* row, std::size_t i) {
    float v;
    std::memcpy(&v, row + 4 * i, 4);
    return v;
}

float load_f16(const std::byte* row, std::size_t i) {
    std::uint16_t bits;
    std::memcpy(&bits, row + 2 * i, 2);
    return f16_to_f32(bits);
}

template <float (*Load)(const std::byte*, std::size_t)>
float dot(const float* q, const std::byte* row, std::size_t n) {
    float partial[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    std::size_t i = 0;
    for (; i + 4 <= n; i += 4)
        for (std::size_t k = 0; k < 4; ++k)
            partial[k] += q[i + k] * Load(row, i + k);
    for (; i < n; ++i)
        partial[0] += q[i] * Load(row, i);
    return (partial[0] + partial[1]) + (partial[2] + partial[3]);
}

template <float (*Load)(const std::byte*, std::size_t)>
void axpy(float a, const std::byte* row, float* acc, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i)
        acc[i] += a * Load(row, i);
}

void store_f32(const float* src, std::byte* row, std::size_t n) { std::memcpy(row, src, 4 * n); }

void store_f16(const float* src, std::byte* row, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) {
        const std::uint16_t bits = f32_to_f16(src[i]);
        std::memcpy(row + 2 * i, &bits, 2);
    }
}

} // namespace

KvRowOps scalar_kv_row_ops(KvElem elem) {
    if (elem == KvElem::F16)
        return {dot<load_f16>, axpy<load_f16>, store_f16};
    return {dot<load_f32>, axpy<load_f32>, store_f32};
}

KvRowOps kv_row_ops(KvElem elem, SimdPath path) {
#if defined(KVSCOPE_KERNELS_AVX2)
    if (path == SimdPath::Avx2)
        return avx2_kv_row_ops(elem);
#endif
    (void)path;
    return scalar_kv_row_ops(elem);
}

} // namespace kvscope::kernels::cpu::detail
