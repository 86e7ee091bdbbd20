// Q6_K tiles: the layout, its packing, and the kernel per instruction set.
//
// One super-block (256 columns) of a 16-row tile, 3392 bytes = 53 lines:
//
//   offset   bytes  what
//   0          64   d: float[16], row r at 4 r (the file's f16, widened:
//                   the 32 bytes it adds keep each super-block a whole
//                   number of cache lines, so no load splits a line)
//   64        256   sc: int8 [sub-block s][row r] at 64 + 16 s + r
//   320      3072   16 sub-blocks of 16 columns, 192 bytes each:
//                     +0   L0  64 bytes  byte 4 r + j: low nibbles of
//                                        columns 16 s + j (bits 0-3) and
//                                        16 s + 4 + j (bits 4-7) of row r
//                     +64  L1  64 bytes  the same for 16 s + 8 + j, 16 s + 12 + j
//                     +128 H   64 bytes  byte 4 r + j: their high 2 bits
//                                        (packed_q6k.h gives the order)
//
// A 64-byte part is one zmm: 16 rows in 16 int32 lanes, 4 columns a lane,
// the operand of one dpbusd per input; the ymm kernels read its first 32
// bytes for rows 0-7 and the last 32 for rows 8-15. Codes stay unsigned
// (0..63, as dpbusd wants); the -32 goes into the sums through the
// activations' bsums. Codes are as many bits as in the file (6 a value)
// and sc as many (int8), so a tile is 3392 / 3360 of the file's rows.
#include "kernels/cpu/packed_q6k.h"

#include <cstdint>
#include <cstring>

#include "kernels/cpu/float16.h"
#include "kernels/cpu/quant_blocks.h"

namespace kvscope::kernels::cpu::detail {
namespace {

std::size_t q6k_tile_bytes(std::size_t cols) { return cols / kSuperBlockValues * kQ6kSuperBytes; }

// The 6-bit code of column c (0..255) of a block: the file keeps each
// 128-column half as 4 groups of 32, low nibbles in ql (groups 0, 1 in the
// low nibbles of 64 bytes, 2, 3 in the high), high bits in qh (2 per group).
int q6k_code(const BlockQ6_K& block, std::size_t c) {
    const std::size_t half = c / 128, group = c % 128 / 32, l = c % 32;
    const int low = (block.ql[64 * half + 32 * (group & 1) + l] >> (4 * (group >> 1))) & 0x0F;
    const int high = (block.qh[32 * half + l] >> (2 * group)) & 3;
    return low | (high << 4);
}

// Where column group k's (0..3) low nibble and high bits go: the part
// (0 = L0, 1 = L1) and shift of the nibble, and the shift in H.
constexpr int kLowPart[4] = {0, 0, 1, 1};
constexpr int kLowShift[4] = {0, 4, 0, 4};
constexpr int kHighShift[4] = {4, 6, 0, 2};

void pack_block(const BlockQ6_K& block, std::size_t r, std::uint8_t* super) {
    const float d = f16_to_f32(block.d);
    std::memcpy(super + kQ6kD + 4 * r, &d, sizeof d);
    for (std::size_t s = 0; s < 16; ++s) {
        super[kQ6kScales + 16 * s + r] = static_cast<std::uint8_t>(block.scales[s]);
        std::uint8_t* sub = super + kQ6kCodes + s * kQ6kSubBytes;
        for (std::size_t k = 0; k < 4; ++k)
            for (std::size_t j = 0; j < 4; ++j) {
                const int q = q6k_code(block, 16 * s + 4 * k + j);
                const std::size_t at = 4 * r + j;
                sub[64 * kLowPart[k] + at] |= static_cast<std::uint8_t>((q & 0x0F) << kLowShift[k]);
                sub[kQ6kH + at] |= static_cast<std::uint8_t>((q >> 4) << kHighShift[k]);
            }
    }
}

void pack_q6k_tile(const std::byte* w, std::size_t row_bytes, std::size_t rows, std::size_t cols, std::byte* tile) {
    std::memset(tile, 0, q6k_tile_bytes(cols)); // zero rows: d, sc and codes 0
    auto* out = reinterpret_cast<std::uint8_t*>(tile);
    for (std::size_t b = 0; b < cols / kSuperBlockValues; ++b)
        for (std::size_t r = 0; r < rows; ++r) {
            BlockQ6_K block;
            std::memcpy(&block, w + r * row_bytes + b * sizeof block, sizeof block);
            pack_block(block, r, out + b * kQ6kSuperBytes);
        }
}

constexpr PackedLayout kQ6kLayout{q6k_tile_bytes, pack_q6k_tile, ActFormat::Q8x256};

} // namespace

const PackedLayout* q6k_packed_layout(WeightType type) { return type == WeightType::Q6_K ? &kQ6kLayout : nullptr; }

PackedGemmFn q6k_packed_gemm(WeightType type, PackedIsa isa) {
    if (type != WeightType::Q6_K)
        return {};
    switch (isa) {
#if defined(KVSCOPE_KERNELS_AVX512VNNI)
    case PackedIsa::Avx512Vnni: return {q6k_gemm_avx512, kQ6kMaxInputs512};
#endif
#if defined(KVSCOPE_KERNELS_AVXVNNI)
    case PackedIsa::AvxVnni: return {q6k_gemm_avxvnni, kQ6kMaxInputs256};
#endif
#if defined(KVSCOPE_KERNELS_AVX2)
    case PackedIsa::Avx2: return {q6k_gemm_avx2, kQ6kMaxInputs256};
#endif
#if defined(KVSCOPE_KERNELS_NEON_DOTPROD)
    case PackedIsa::NeonDot: return {q6k_gemm_neondot, kQ6kMaxInputsNeon};
#endif
#if defined(KVSCOPE_KERNELS_NEON)
    case PackedIsa::Neon: return {q6k_gemm_neon, kQ6kMaxInputsNeon};
#endif
    default: return {};
    }
}

} // namespace kvscope::kernels::cpu::detail
