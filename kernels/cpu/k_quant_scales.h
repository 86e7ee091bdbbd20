// Internal: the 6-bit sub-block scales and mins of Q4_K/Q5_K, unpacked from
// their 12 packed bytes (layout in quant_blocks.h). Sub-blocks 0-3 keep
// them in the low 6 bits of bytes j and j+4; sub-blocks 4-7 keep their low
// 4 bits in the nibbles of byte j+4 and their top 2 bits in the spare top
// bits of bytes j-4 (scale) and j (min).
#pragma once

#include <cstdint>

// Internal linkage (the unnamed namespace): these are compiled into the
// SIMD files too, and a shared inline copy could hand the portable path an
// instruction its CPU lacks.
namespace kvscope::kernels::cpu::detail {
namespace {

struct KScales {
    std::uint8_t scale[8];
    std::uint8_t min[8];
};

inline KScales unpack_k_scales(const std::uint8_t* q) {
    KScales s;
    for (int j = 0; j < 4; ++j) {
        s.scale[j] = q[j] & 63;
        s.min[j] = q[j + 4] & 63;
        s.scale[j + 4] = static_cast<std::uint8_t>((q[j + 8] & 0x0F) | ((q[j] >> 6) << 4));
        s.min[j + 4] = static_cast<std::uint8_t>((q[j + 8] >> 4) | ((q[j + 4] >> 6) << 4));
    }
    return s;
}

} // namespace
} // namespace kvscope::kernels::cpu::detail
