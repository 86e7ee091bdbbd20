#include "engine/model/quantize.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <string>

#include "engine/core/error.h"
#include "kernels/cpu/float16_encode.h"
#include "kernels/cpu/quant_blocks.h"

namespace kvscope {
namespace {

namespace cpu = kernels::cpu;
constexpr std::uint64_t kBlock = cpu::kQuantBlockValues;

// Q8_0: d = max|x| / 127, q = round(x / d).
void quantize_q8_0(const float* x, cpu::BlockQ8_0* out, std::uint64_t blocks) {
    for (std::uint64_t b = 0; b < blocks; ++b, x += kBlock) {
        float amax = 0;
        for (std::uint64_t i = 0; i < kBlock; ++i)
            amax = std::max(amax, std::abs(x[i]));
        const float d = amax / 127.0f;
        const float id = d != 0 ? 1.0f / d : 0.0f;
        out[b].d = cpu::f32_to_f16(d);
        for (std::uint64_t i = 0; i < kBlock; ++i)
            out[b].qs[i] = static_cast<std::int8_t>(std::lround(x[i] * id));
    }
}

// Q4_0: d = (the value of largest magnitude) / -8, q = x / d + 8 in 0..15;
// value i in the low nibble of byte i, value i + 16 in its high nibble.
void quantize_q4_0(const float* x, cpu::BlockQ4_0* out, std::uint64_t blocks) {
    for (std::uint64_t b = 0; b < blocks; ++b, x += kBlock) {
        float amax = 0, max = 0;
        for (std::uint64_t i = 0; i < kBlock; ++i)
            if (std::abs(x[i]) > amax) {
                amax = std::abs(x[i]);
                max = x[i];
            }
        const float d = max / -8.0f;
        const float id = d != 0 ? 1.0f / d : 0.0f;
        out[b].d = cpu::f32_to_f16(d);
        auto q = [&](float v) { return static_cast<std::uint8_t>(std::min(15.0f, std::floor(v * id + 8.5f))); };
        for (std::uint64_t i = 0; i < kBlock / 2; ++i)
            out[b].qs[i] = static_cast<std::uint8_t>(q(x[i]) | (q(x[i + kBlock / 2]) << 4));
    }
}

} // namespace

void quantize_row(GgmlType type, const float* src, void* dst, std::uint64_t n) {
    const std::uint64_t block_values = traits(type).block_values;
    if (n % block_values != 0)
        throw Error("quantize_row: " + std::to_string(n) + " values are not whole " +
                    std::string(to_string(type)) + " blocks");
    switch (type) {
    case GgmlType::F32:
        std::memcpy(dst, src, n * sizeof(float));
        return;
    case GgmlType::F16:
        for (std::uint64_t i = 0; i < n; ++i)
            static_cast<std::uint16_t*>(dst)[i] = cpu::f32_to_f16(src[i]);
        return;
    case GgmlType::BF16: // round to nearest even on the upper 16 bits (finite inputs)
        for (std::uint64_t i = 0; i < n; ++i) {
            const std::uint32_t bits = std::bit_cast<std::uint32_t>(src[i]);
            static_cast<std::uint16_t*>(dst)[i] = static_cast<std::uint16_t>((bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16);
        }
        return;
    case GgmlType::Q8_0:
        quantize_q8_0(src, static_cast<cpu::BlockQ8_0*>(dst), n / kBlock);
        return;
    case GgmlType::Q4_0:
        quantize_q4_0(src, static_cast<cpu::BlockQ4_0*>(dst), n / kBlock);
        return;
    default:
        throw Error("quantizing to " + std::string(to_string(type)) + " is not supported");
    }
}

} // namespace kvscope
