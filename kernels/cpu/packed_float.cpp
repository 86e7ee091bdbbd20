// The F16 and BF16 tile layout and the choice of kernel per instruction set.
//
// One tile of kPackedRows = 16 rows of `cols` values, column-major: column c
// holds the 16 rows' values side by side, in the file's own 2-byte format
// (nothing is widened, so a decode step streams the file's bytes and no
// more):
//
//   byte  0      32c        32c + 2r           32 cols      tile_bytes
//         | col 0 | ... | col c: rows 0..15 | ... | zero pad to 64 |
//                        (row r at 32c + 2r)
//
// One 32-byte column is one vcvtph2ps (F16) or zero-extend and shift (BF16)
// to a zmm of 16 rows, multiplied by each input's x[c] broadcast from
// memory: no shuffles and no horizontal sums. The AVX2 kernels read bytes
// 32c .. 32c + 15 (rows 0-7) and 32c + 16 .. 32c + 31 (rows 8-15) as two
// halves. Rows past the matrix's last are +0.
#include "kernels/cpu/packed_float.h"

#include <cstdint>
#include <cstring>

namespace kvscope::kernels::cpu::detail {
namespace {

std::size_t float_tile_bytes(std::size_t cols) {
    const std::size_t bytes = cols * kFloatColumnBytes;
    return (bytes + kPackedAlign - 1) / kPackedAlign * kPackedAlign;
}

// Column by column: each output column is one 32-byte write, the 16 rows'
// reads run forward side by side.
void pack_float_tile(const std::byte* w, std::size_t row_bytes, std::size_t rows, std::size_t cols,
                     std::byte* tile) {
    std::memset(tile, 0, float_tile_bytes(cols));
    for (std::size_t c = 0; c < cols; ++c)
        for (std::size_t r = 0; r < rows; ++r)
            std::memcpy(tile + c * kFloatColumnBytes + 2 * r, w + r * row_bytes + 2 * c, 2);
}

constexpr PackedLayout kFloatLayout{float_tile_bytes, pack_float_tile, ActFormat::F32};

} // namespace

const PackedLayout* float_packed_layout(WeightType type) {
    return type == WeightType::F16 || type == WeightType::BF16 ? &kFloatLayout : nullptr;
}

PackedGemmFn float_packed_gemm(WeightType type, PackedIsa isa) {
    switch (isa) {
    case PackedIsa::Avx512Vnni:
#if defined(KVSCOPE_KERNELS_AVX512VNNI)
        return avx512_float_packed_gemm(type);
#else
        return {};
#endif
    // Float math has no use for VNNI: an AVX-VNNI CPU runs the AVX2 kernel.
    case PackedIsa::AvxVnni:
    case PackedIsa::Avx2:
#if defined(KVSCOPE_KERNELS_AVX2)
        return avx2_float_packed_gemm(type);
#else
        return {};
#endif
    // Float math has no use for SDOT or SMMLA: every NEON path runs the
    // Advanced SIMD kernel.
    case PackedIsa::Neon:
    case PackedIsa::NeonDot:
    case PackedIsa::NeonI8mm:
#if defined(KVSCOPE_KERNELS_NEON)
        return neon_float_packed_gemm(type);
#else
        return {};
#endif
    }
    return {};
}

} // namespace kvscope::kernels::cpu::detail
