#include "kernels/cpu/activation.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "kernels/cpu/gelu.h"
#include "kernels/cpu/parallel_for.h"
#include "kernels/cpu/simd_path.h"

namespace kvscope::kernels::cpu {
namespace {

// What a gated activation hands to a thread: a multiple of the 8-value
// vectors, so that every value is computed by the same code (vector or
// tail) whatever the thread count. A decode step's 1-2 pieces are still
// worth the hand-off; a prompt's FFN rows give thousands.
constexpr std::size_t kPieceValues = 4096;
static_assert(kPieceValues % 8 == 0);

// Calls f(first, count) for the pieces of [0, n) on up to `threads` threads.
template <typename F>
void in_pieces(std::size_t n, int threads, F&& f) {
    const std::size_t pieces = (n + kPieceValues - 1) / kPieceValues;
    detail::parallel_for(pieces, threads, detail::Schedule::Even, [&](std::size_t p, int) {
        const std::size_t first = p * kPieceValues;
        f(first, std::min(kPieceValues, n - first));
    });
}

void silu_mul_piece(const float* gate, const float* up, float* out, std::size_t n) {
#if defined(KVSCOPE_KERNELS_AVX2)
    if (simd_path() == SimdPath::Avx2)
        return detail::avx2_silu_mul(gate, up, out, n);
#endif
#if defined(KVSCOPE_KERNELS_NEON)
    if (is_neon(simd_path()))
        return detail::neon_silu_mul(gate, up, out, n);
#endif
    // For very negative g, exp(-g) overflows to inf and g / inf = -0: the
    // right limit, no NaN.
    for (std::size_t i = 0; i < n; ++i)
        out[i] = gate[i] / (1.0f + std::exp(-gate[i])) * up[i];
}

void gelu_mul_piece(const float* gate, const float* up, float* out, std::size_t n) {
#if defined(KVSCOPE_KERNELS_AVX2)
    if (simd_path() == SimdPath::Avx2)
        return detail::avx2_gelu_mul(gate, up, out, n);
#endif
#if defined(KVSCOPE_KERNELS_NEON)
    if (is_neon(simd_path()))
        return detail::neon_gelu_mul(gate, up, out, n);
#endif
    for (std::size_t i = 0; i < n; ++i)
        out[i] = detail::gelu_f16(gate[i]) * up[i];
}

} // namespace

void softmax(float* x, std::size_t n) {
    if (n == 0)
        return;
    const float max = *std::max_element(x, x + n);
    double sum = 0.0;
    for (std::size_t i = 0; i < n; ++i) {
        x[i] = std::exp(x[i] - max);
        sum += x[i];
    }
    const auto inverse = static_cast<float>(1.0 / sum);
    for (std::size_t i = 0; i < n; ++i)
        x[i] *= inverse;
}

void silu_mul(const float* gate, const float* up, float* out, std::size_t n, int threads) {
    in_pieces(n, threads, [&](std::size_t first, std::size_t count) {
        silu_mul_piece(gate + first, up + first, out + first, count);
    });
}

void gelu_mul(const float* gate, const float* up, float* out, std::size_t n, int threads) {
    in_pieces(n, threads, [&](std::size_t first, std::size_t count) {
        gelu_mul_piece(gate + first, up + first, out + first, count);
    });
}

void swiglu_clamped_mul(const float* gate, const float* up, float* out, std::size_t n, int threads) {
    constexpr float alpha = 1.702f, limit = 7.0f;
    in_pieces(n, threads, [&](std::size_t first, std::size_t count) {
        for (std::size_t i = first; i < first + count; ++i) {
            const float x = std::min(gate[i], limit);
            const float y = std::clamp(up[i], -limit, limit);
            out[i] = x / (1.0f + std::exp(-alpha * x)) * (y + 1.0f);
        }
    });
}

void softcap(float* x, std::size_t n, float cap) {
    if (!std::isfinite(cap) || cap <= 0.0f)
        throw std::invalid_argument("softcap: the cap must be finite and > 0 (got " + std::to_string(cap) + ")");
#if defined(KVSCOPE_KERNELS_AVX2)
    if (simd_path() == SimdPath::Avx2)
        return detail::avx2_softcap(x, n, cap);
#endif
#if defined(KVSCOPE_KERNELS_NEON)
    if (is_neon(simd_path()))
        return detail::neon_softcap(x, n, cap);
#endif
    const float inverse = 1.0f / cap;
    for (std::size_t i = 0; i < n; ++i)
        x[i] = cap * std::tanh(x[i] * inverse);
}

} // namespace kvscope::kernels::cpu
