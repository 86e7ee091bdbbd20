// AVX2 + FMA + F16C KV row operations (compiled with those flags, called
// only after the run-time CPU check in simd_path.cpp). F16C converts 8
// halves per instruction, rounding to nearest even like the portable code.
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "kernels/cpu/kv_row_ops.h"
#include "kernels/cpu/avx2_hsum.h"

namespace kvscope::kernels::cpu::detail {
namespace {

struct F32 {
    static __m256 load8(const std::byte* row, std::size_t i) {
        return _mm256_loadu_ps(reinterpret_cast<const float*>(row) + i);
    }
    static float load1(const std::byte* row, std::size_t i) {
        float v;
        std::memcpy(&v, row + 4 * i, 4);
        return v;
    }
};

struct F16 {
    static __m256 load8(const std::byte* row, std::size_t i) {
        return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row + 2 * i)));
    }
    static float load1(const std::byte* row, std::size_t i) {
        std::uint16_t bits;
        std::memcpy(&bits, row + 2 * i, 2);
        return _cvtsh_ss(bits);
    }
};

template <typename Elem>
float dot(const float* q, const std::byte* row, std::size_t n) {
    __m256 acc0 = _mm256_setzero_ps();
    __m256 acc1 = _mm256_setzero_ps();
    std::size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(q + i), Elem::load8(row, i), acc0);
        acc1 = _mm256_fmadd_ps(_mm256_loadu_ps(q + i + 8), Elem::load8(row, i + 8), acc1);
    }
    for (; i + 8 <= n; i += 8)
        acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(q + i), Elem::load8(row, i), acc0);
    float sum = hsum(_mm256_add_ps(acc0, acc1));
    for (; i < n; ++i)
        sum += q[i] * Elem::load1(row, i);
    return sum;
}

template <typename Elem>
void axpy(float a, const std::byte* row, float* acc, std::size_t n) {
    const __m256 a8 = _mm256_set1_ps(a);
    std::size_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(acc + i, _mm256_fmadd_ps(a8, Elem::load8(row, i), _mm256_loadu_ps(acc + i)));
    for (; i < n; ++i)
        acc[i] += a * Elem::load1(row, i);
}

void store_f32(const float* src, std::byte* row, std::size_t n) { std::memcpy(row, src, 4 * n); }

void store_f16(const float* src, std::byte* row, std::size_t n) {
    std::size_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm_storeu_si128(reinterpret_cast<__m128i*>(row + 2 * i),
                         _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT));
    for (; i < n; ++i) {
        const auto bits = static_cast<std::uint16_t>(_cvtss_sh(src[i], _MM_FROUND_TO_NEAREST_INT));
        std::memcpy(row + 2 * i, &bits, 2);
    }
}

} // namespace

KvRowOps avx2_kv_row_ops(KvElem elem) {
    if (elem == KvElem::F16)
        return {dot<F16>, axpy<F16>, store_f16};
    return {dot<F32>, axpy<F32>, store_f32};
}

} // namespace kvscope::kernels::cpu::detail
