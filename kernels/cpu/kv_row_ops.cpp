// Portable KV row operations, and the choice between them and the SIMD
// paths' (AVX2, NEON).
#include "kernels/cpu/kv_row_ops.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace kvscope::kernels::cpu::detail {
namespace {

// One row at a time; each value is decoded once and used by all H heads.
template <RowCode Code, std::size_t H>
void dot_row(const float* q, const std::byte* row, const std::byte* scales, std::size_t n, float* out,
             std::size_t out_stride) {
    float partial[H][4] = {};
    for (std::size_t i = 0; i < n; ++i) {
        const float x = decode_value<Code>(row, scales, i, n);
        for (std::size_t h = 0; h < H; ++h)
            partial[h][i % 4] += q[h * n + i] * x;
    }
    for (std::size_t h = 0; h < H; ++h)
        out[h * out_stride] = (partial[h][0] + partial[h][1]) + (partial[h][2] + partial[h][3]);
}

template <RowCode Code, std::size_t H>
void dot(const float* q, const KvRows& rows, std::size_t n, float* out, std::size_t out_stride) {
    for (std::size_t r = 0; r < rows.count; ++r)
        dot_row<Code, H>(q, rows.first + r * rows.stride, rows.scales + r * rows.scale_stride, n, out + r,
                         out_stride);
}

template <RowCode Code, std::size_t H>
void axpy(const float* w, std::size_t w_stride, const KvRows& rows, float* acc, std::size_t n) {
    axpy_values<Code, H>(w, w_stride, rows, 0, acc, n);
}

template <RowCode Code>
void decode(const KvRows& rows, std::size_t n, float* out, std::size_t out_stride) {
    for (std::size_t r = 0; r < rows.count; ++r) {
        const std::byte* row = rows.first + r * rows.stride;
        const std::byte* scales = rows.scales + r * rows.scale_stride;
        for (std::size_t i = 0; i < n; ++i)
            out[r * out_stride + i] = decode_value<Code>(row, scales, i, n);
    }
}

template <RowCode Code, std::size_t... H>
constexpr KvRowOps ops(std::index_sequence<H...>) {
    return {{dot<Code, H + 1>...}, {axpy<Code, H + 1>...}, decode<Code>};
}

template <RowCode Code>
constexpr KvRowOps ops() {
    return ops<Code>(std::make_index_sequence<kSharedHeads>());
}

} // namespace

KvRowOps scalar_kv_row_ops(RowCode code) {
    switch (code) {
    case RowCode::F32: return ops<RowCode::F32>();
    case RowCode::F16: return ops<RowCode::F16>();
    case RowCode::BF16: return ops<RowCode::BF16>();
    case RowCode::Fp8: return ops<RowCode::Fp8>();
    case RowCode::Int8: return ops<RowCode::Int8>();
    case RowCode::Int4Groups: return ops<RowCode::Int4Groups>();
    case RowCode::Int2Groups: return ops<RowCode::Int2Groups>();
    case RowCode::Int4Channels: return ops<RowCode::Int4Channels>();
    case RowCode::Int2Channels: return ops<RowCode::Int2Channels>();
    }
    return ops<RowCode::F32>();
}

RowCode k_row_code(KvElem elem) {
    switch (elem) {
    case KvElem::F32: return RowCode::F32;
    case KvElem::F16: return RowCode::F16;
    case KvElem::BF16: return RowCode::BF16;
    case KvElem::Fp8E4M3: return RowCode::Fp8;
    case KvElem::Int8: return RowCode::Int8;
    case KvElem::Int4: return RowCode::Int4Groups;
    case KvElem::Int4Kivi: return RowCode::Int4Channels;
    case KvElem::Int2Kivi: return RowCode::Int2Channels;
    }
    return RowCode::F32;
}

RowCode v_row_code(KvElem elem) {
    switch (elem) {
    case KvElem::Int4Kivi: return RowCode::Int4Groups;
    case KvElem::Int2Kivi: return RowCode::Int2Groups;
    default: return k_row_code(elem);
    }
}

float scalar_softmax_row(float* scores, std::size_t count, float scale, float softcap, float* max) {
    float top = -std::numeric_limits<float>::infinity();
    for (std::size_t p = 0; p < count; ++p) {
        scores[p] *= scale;
        if (softcap > 0.0f)
            scores[p] = softcap * std::tanh(scores[p]);
        top = std::max(top, scores[p]);
    }
    double sum = 0.0;
    for (std::size_t p = 0; p < count; ++p) {
        scores[p] = std::exp(scores[p] - top);
        sum += scores[p];
    }
    *max = top;
    return static_cast<float>(sum);
}

SoftmaxRowFn softmax_row(SimdPath path) {
#if defined(KVSCOPE_KERNELS_AVX2)
    if (path == SimdPath::Avx2)
        return avx2_softmax_row;
#endif
#if defined(KVSCOPE_KERNELS_NEON)
    if (is_neon(path))
        return neon_softmax_row;
#endif
    (void)path;
    return scalar_softmax_row;
}

void scalar_store_f16_row(const float* src, std::size_t n, std::byte* row) {
    for (std::size_t i = 0; i < n; ++i)
        put_f16(row, i, src[i]);
}

F16StoreFn store_f16_row(SimdPath path) {
#if defined(KVSCOPE_KERNELS_AVX2)
    if (path == SimdPath::Avx2)
        return avx2_store_f16_row;
#endif
#if defined(KVSCOPE_KERNELS_NEON)
    if (is_neon(path))
        return neon_store_f16_row;
#endif
    (void)path;
    return scalar_store_f16_row;
}

KvRowOps kv_row_ops(RowCode code, SimdPath path) {
#if defined(KVSCOPE_KERNELS_AVX2)
    if (path == SimdPath::Avx2)
        return avx2_kv_row_ops(code);
#endif
#if defined(KVSCOPE_KERNELS_NEON)
    if (is_neon(path))
        return neon_kv_row_ops(code);
#endif
    (void)path;
    return scalar_kv_row_ops(code);
}

} // namespace kvscope::kernels::cpu::detail
