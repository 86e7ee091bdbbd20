// The blocks-of-32 row dot products (Q8_0, Q4_0, Q5_0) with AVX-512 VNNI:
// one 512-bit dpbusd covers two weight blocks. This file alone is compiled
// with AVX-512 code generation; matmul.cpp calls it only on CPUs that
// report AVX-512 F, BW and VNNI, within the AVX2 path.
//
// The activations arrive as ActPair64 (activation_quant.h): codes already
// offset to unsigned and scales already spread over their lanes, so a
// pair of blocks costs each input one dpbusd, one multiply, one convert
// and one FMA, with no shuffles; the weight side is prepared once for all
// the inputs. That per-input cost is what grows with the number of
// sequences decoding together, and what prefill spends its time on.
//
// Bit-identical to the AVX2 kernel (blocks32_dot.h): the low 8 lanes of an
// accumulator hold what its even-block accumulator holds, the high 8 its
// odd-block one, updated by the same operations in the same order (and the
// last block of an odd count goes to the low half, as there), the integer
// sums are exact both ways, and the final reduction is the same.
#include "kernels/cpu/avx512_intrinsics.h"

#include "kernels/cpu/blocks32_dot.h" // the weight blocks' decoding, shared
#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/row_dot.h"

namespace kvscope::kernels::cpu::detail {
namespace {

// dpbusd multiplies the unsigned activations x + 128 by the signed codes w:
// sum (x + 128) w = sum x w + 128 sum w, so the sums start from
// -128 sum w, computed once per weight block for all inputs.
__m512i offset_correction(__m512i codes) {
    const __m512i zero = _mm512_setzero_si512();
    return _mm512_sub_epi32(zero, _mm512_dpbusd_epi32(zero, _mm512_set1_epi8(-128), codes));
}

__m256i offset_correction(__m256i codes) {
    const __m256i zero = _mm256_setzero_si256();
    return _mm256_sub_epi32(zero, _mm256_dpbusd_epi32(zero, _mm256_set1_epi8(-128), codes));
}

template <typename Block, int N, typename Decode>
void dot_pairs_n(const std::byte* w, const std::byte* xb, std::size_t x_stride, std::size_t cols,
                 Decode decode, float* out) {
    const ActPair64* x[N];
    __m512 acc[N];
    for (int j = 0; j < N; ++j) {
        x[j] = reinterpret_cast<const ActPair64*>(xb + j * x_stride);
        acc[j] = _mm512_setzero_ps();
    }
    const std::size_t blocks = cols / kActBlockValues;
    for (std::size_t p = 0; p < blocks / 2; ++p) {
        const std::byte* even = w + 2 * p * sizeof(Block);
        const std::byte* odd = even + sizeof(Block);
        const __m512 dw = _mm512_insertf32x8(_mm512_set1_ps(half(even)), _mm256_set1_ps(half(odd)), 1);
        const __m512i codes = _mm512_inserti64x4(_mm512_zextsi256_si512(decode(even)), decode(odd), 1);
        const __m512i correction = offset_correction(codes);
        for (int j = 0; j < N; ++j) {
            const ActPair64& a = x[j][p];
            const __m512i sums = _mm512_dpbusd_epi32(correction, _mm512_loadu_si512(a.u), codes);
            const __m512 scale = _mm512_mul_ps(dw, _mm512_loadu_ps(a.d));
            acc[j] = _mm512_fmadd_ps(scale, _mm512_cvtepi32_ps(sums), acc[j]);
        }
    }
    __m256 even_acc[N], odd_acc[N];
    for (int j = 0; j < N; ++j) {
        even_acc[j] = _mm512_castps512_ps256(acc[j]);
        odd_acc[j] = _mm512_extractf32x8_ps(acc[j], 1);
    }
    if (blocks % 2 != 0) { // the last block, alone in the low half of its pair
        const std::byte* block = w + (blocks - 1) * sizeof(Block);
        const __m256 dw = _mm256_set1_ps(half(block));
        const __m256i codes = decode(block);
        const __m256i correction = offset_correction(codes);
        for (int j = 0; j < N; ++j) {
            const ActPair64& a = x[j][blocks / 2];
            const __m256i sums = _mm256_dpbusd_epi32(correction, load256(a.u), codes);
            const __m256 scale = _mm256_mul_ps(dw, _mm256_loadu_ps(a.d));
            even_acc[j] = _mm256_fmadd_ps(scale, _mm256_cvtepi32_ps(sums), even_acc[j]);
        }
    }
    for (int j = 0; j < N; ++j)
        out[j] = hsum(_mm256_add_ps(even_acc[j], odd_acc[j]));
}

template <typename Block, typename Decode>
void multi_pairs(const std::byte* w, const void* x, std::size_t x_stride, std::size_t count, std::size_t cols,
                 float* out, Decode decode) {
    const auto* xb = static_cast<const std::byte*>(x);
    switch (count) {
    case 8: return dot_pairs_n<Block, 8>(w, xb, x_stride, cols, decode, out);
    case 7: return dot_pairs_n<Block, 7>(w, xb, x_stride, cols, decode, out);
    case 6: return dot_pairs_n<Block, 6>(w, xb, x_stride, cols, decode, out);
    case 5: return dot_pairs_n<Block, 5>(w, xb, x_stride, cols, decode, out);
    case 4: return dot_pairs_n<Block, 4>(w, xb, x_stride, cols, decode, out);
    case 3: return dot_pairs_n<Block, 3>(w, xb, x_stride, cols, decode, out);
    case 2: return dot_pairs_n<Block, 2>(w, xb, x_stride, cols, decode, out);
    default: return dot_pairs_n<Block, 1>(w, xb, x_stride, cols, decode, out);
    }
}

// Lambdas, not function pointers: inlined into the block loop.
void multi_q8_0(const std::byte* w, const void* x, std::size_t s, std::size_t c, std::size_t cols, float* out) {
    multi_pairs<BlockQ8_0>(w, x, s, c, cols, out, [](const std::byte* b) { return decode_q8_0(b); });
}
void multi_q4_0(const std::byte* w, const void* x, std::size_t s, std::size_t c, std::size_t cols, float* out) {
    multi_pairs<BlockQ4_0>(w, x, s, c, cols, out, [](const std::byte* b) { return decode_q4_0(b); });
}
void multi_q5_0(const std::byte* w, const void* x, std::size_t s, std::size_t c, std::size_t cols, float* out) {
    multi_pairs<BlockQ5_0>(w, x, s, c, cols, out, [](const std::byte* b) { return decode_q5_0(b); });
}

} // namespace

bool avx512vnni_available() { return cpu_features().avx512_vnni; }

RowDot avx512vnni_row_dot(WeightType type) {
    switch (type) {
    case WeightType::Q8_0: return single_input<multi_q8_0>;
    case WeightType::Q4_0: return single_input<multi_q4_0>;
    case WeightType::Q5_0: return single_input<multi_q5_0>;
    default: return nullptr;
    }
}

RowDotMultiFn avx512vnni_row_dot_multi(WeightType type) {
    switch (type) {
    case WeightType::Q8_0: return {multi_q8_0, kMaxMultiInputs};
    case WeightType::Q4_0: return {multi_q4_0, kMaxMultiInputs};
    case WeightType::Q5_0: return {multi_q5_0, kMaxMultiInputs};
    default: return {};
    }
}

} // namespace kvscope::kernels::cpu::detail
