#include "kernels/cpu/activation_quant.h"

#include <bit>
#include <cmath>
#include <cstdint>

#include "kernels/cpu/float16.h"
#include "kernels/cpu/float16_encode.h"

namespace kvscope::kernels::cpu::detail {
namespace {

// Rounds to the nearest integer, ties to even, for |v| <= 2^22: adding and
// subtracting 1.5 * 2^23 leaves no fraction bits, so the FPU's own
// round-to-nearest-even does the work, inline, where std::nearbyint is a
// library call on baseline x86-64. (Not folded away without -ffast-math.)
float round_even(float v) {
    constexpr float magic = 12582912.0f;
    return (v + magic) - magic;
}

// Quantizes n values to int8 codes; returns max|x|.
float quantize_block_scalar(const float* x, std::size_t n, std::int8_t* q) {
    float amax = 0.0f;
    for (std::size_t i = 0; i < n; ++i) {
        const float a = std::fabs(x[i]);
        amax = a > amax ? a : amax;
    }
    const float inverse = code_multiplier(amax);
    for (std::size_t i = 0; i < n; ++i) {
        float v = x[i] * inverse;
        // The comparisons also send NaN to -127, keeping the cast defined.
        v = v >= -127.0f ? v : -127.0f;
        v = v <= 127.0f ? v : 127.0f;
        q[i] = static_cast<std::int8_t>(round_even(v));
    }
    return amax;
}

float quantize_block(const float* x, std::size_t n, std::int8_t* q, std::int16_t* sums16, SimdPath path) {
#if defined(KVSCOPE_KERNELS_AVX2)
    if (path == SimdPath::Avx2)
        return quantize_block_avx2(x, n, q, sums16);
#endif
#if defined(KVSCOPE_KERNELS_NEON)
    if (is_neon(path))
        return quantize_block_neon(x, n, q, sums16);
#endif
    (void)path;
    const float amax = quantize_block_scalar(x, n, q);
    for (std::size_t j = 0; sums16 != nullptr && j < n / 16; ++j) {
        int sum = 0;
        for (std::size_t i = 0; i < 16; ++i)
            sum += q[16 * j + i];
        sums16[j] = static_cast<std::int16_t>(sum);
    }
    return amax;
}

// ggml keeps a Q8_0 / Q8_1 block's d (and Q8_1's s) in f16: v rounded to
// the nearest f16, ties to even, as a float. In f16's normal range that
// rounds the float's mantissa to 10 bits in place (a carry correctly bumps
// the exponent), a third of the cost of encoding and decoding; elsewhere
// (subnormal, overflow, NaN) through the encoder.
float f16_rounded(float v) {
    const auto bits = std::bit_cast<std::uint32_t>(v);
    const std::uint32_t magnitude = bits & 0x7FFFFFFFu;
    if (magnitude >= 0x38800000u && magnitude < 0x477FF000u) // [2^-14, 65520)
        return std::bit_cast<float>((bits + 0xFFFu + ((bits >> 13) & 1u)) & ~0x1FFFu);
    return f16_to_f32(f32_to_f16(v));
}

} // namespace

void quantize_act32(const float* x, std::size_t n, ActBlock32* out, SimdPath path) {
    for (std::size_t b = 0; b < n / kActBlockValues; ++b, x += kActBlockValues)
        out[b].d = f16_rounded(quantize_block(x, kActBlockValues, out[b].qs, nullptr, path) / 127.0f);
}

void quantize_act32_sum(const float* x, std::size_t n, ActBlock32Sum* out, SimdPath path) {
    // The quantizer's own 16-code sums: in registers on the AVX2 path,
    // where summing the stored codes again took as long as quantizing.
    static_assert(kActBlockValues == 32);
    std::int16_t sums16[2];
    const std::size_t blocks = n / kActBlockValues;
    for (std::size_t b = 0; b < blocks; ++b, x += kActBlockValues) {
        out[b].d = quantize_block(x, kActBlockValues, out[b].qs, sums16, path) / 127.0f; // unrounded for now
        out[b].sum = sums16[0] + sums16[1];
    }
    // The roundings in a pass of their own, independent from block to block:
    // inside the loop above they added a fifth to its time.
    for (std::size_t b = 0; b < blocks; ++b) {
        out[b].s = f16_rounded(out[b].d * static_cast<float>(out[b].sum));
        out[b].d = f16_rounded(out[b].d);
    }
}

void pair_act32(const ActBlock32* in, std::size_t blocks, ActPair64* out) {
    for (std::size_t b = 0; b < (blocks + 1) / 2 * 2; ++b) {
        ActPair64& pair = out[b / 2];
        const std::size_t half = b % 2;
        const bool real = b < blocks;
        for (std::size_t lane = 0; lane < 8; ++lane)
            pair.d[8 * half + lane] = real ? in[b].d : 0.0f;
        for (std::size_t i = 0; i < kActBlockValues; ++i)
            pair.u[kActBlockValues * half + i] =
                real ? static_cast<std::uint8_t>(in[b].qs[i] + 128) : std::uint8_t{128};
    }
}

void quantize_act256(const float* x, std::size_t n, ActBlock256* out, SimdPath path) {
    for (std::size_t b = 0; b < n / kActSuperValues; ++b, x += kActSuperValues) {
        const float amax = quantize_block(x, kActSuperValues, out[b].qs, out[b].bsums, path);
        out[b].d = amax != 0.0f ? 1.0f / (127.0f / amax) : 0.0f; // Q8_K's d = 1 / iscale
    }
}

} // namespace kvscope::kernels::cpu::detail
