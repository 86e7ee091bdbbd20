// The tile layout of the blocks-of-32 types (Q8_0, Q4_0, Q5_0, Q4_1,
// Q5_1, IQ4_NL, MXFP4) and the
// choice of kernel per instruction set (packed_kernel.h says what tiles are
// for; packed_blocks32.h holds the numbers).
//
// One tile: kPackedRows = 16 rows of `cols` values, B = cols / 32 blocks.
//
//   codes    [block b][code_bytes(type)]      B x code_bytes, 64-byte lines
//   scales   [block b][row r] f16 d           B x 32 bytes (MXFP4: E8M0 e, B x 16)
//   mins     [block b][row r] f16 m           B x 32 bytes (Q4_1, Q5_1 only)
//   padding  zeros, to a multiple of 64 bytes
//
// A group is 4 consecutive values 4g..4g+3 (g = 0..7) of one block for the
// 16 rows: 64 bytes, row r's 4 codes at 4 r. Loaded into a zmm, int32 lane
// r is row r's 4 codes, the operand of one dpbusd against an input's 4
// activation codes broadcast; a ymm takes the 8 rows of one half, bytes
// [32 h, 32 h + 32). Codes are stored unsigned (dpbusd's unsigned operand):
//
//   Q8_0  512 bytes  group g at 64 g: byte 4 r + j = q + 128 of value 4 g + j
//   Q4_0  256 bytes  line k (0..3) at 64 k: byte 4 r + j = the GGUF qs byte
//                    4 k + j of row r, as it is: its low nibble is value
//                    4 k + j (group k), its high one value 16 + 4 k + j
//                    (group k + 4); codes q + 8
//   Q5_0  320 bytes  Q4_0's 256, then 8 little-endian u64 at 256 + 8 g: bit
//                    4 r + j of word g is the fifth bit of value 4 g + j of
//                    row r (a ready AVX-512 byte mask: code = nibble | 16);
//                    codes q + 16
//   Q4_1  as Q4_0, codes q (0..15, no offset: the min is added per block)
//   Q5_1  as Q5_0, codes q (0..31)
//   IQ4_NL as Q4_0, the nibbles the GGUF's table indices; the kernels look
//          each up as kIq4nlValues[i] + 128 (offset 128, as Q8_0)
//   MXFP4 as IQ4_NL with kMxfp4Values[i] + 12 (offset 12: codes 0..24);
//          its scales the GGUF's E8M0 bytes, which the kernels turn into
//          the float 2^(e - 128) (f16 has neither the range nor, below
//          2^-24, the exact values)
//
// Sizes are those of the GGUF rows: 16 x 34, 18, 22, 20, 24, 18 and 17
// bytes per block column, before the tile's padding to a cache line.
#include "kernels/cpu/packed_blocks32.h"

#include <cstring>

namespace kvscope::kernels::cpu::detail {
namespace {

using blocks32::code_bytes;
using blocks32::kGroupBytes;
using blocks32::kGroupValues;
using blocks32::scale_bytes;
using blocks32::scale_size;

constexpr std::size_t kHalfBlock = kQuantBlockValues / 2; // Q4_0/Q5_0: values per nibble half

std::size_t round_up(std::size_t bytes) { return (bytes + kPackedAlign - 1) / kPackedAlign * kPackedAlign; }

template <WeightType T>
std::size_t tile_bytes(std::size_t cols) {
    return round_up(cols / kQuantBlockValues * blocks32::block_tile_bytes(T));
}

// Where a GGUF block keeps its nibbles and fifth bits.
template <WeightType T>
constexpr std::size_t qs_offset() {
    switch (T) {
    case WeightType::Q4_0: return offsetof(BlockQ4_0, qs);
    case WeightType::Q5_0: return offsetof(BlockQ5_0, qs);
    case WeightType::Q4_1: return offsetof(BlockQ4_1, qs);
    case WeightType::Q5_1: return offsetof(BlockQ5_1, qs);
    case WeightType::IQ4_NL: return offsetof(BlockIQ4_NL, qs);
    case WeightType::MXFP4: return offsetof(BlockMXFP4, qs);
    default: return offsetof(BlockQ8_0, qs);
    }
}
template <WeightType T>
constexpr std::size_t qh_offset() {
    return T == WeightType::Q5_0 ? offsetof(BlockQ5_0, qh) : offsetof(BlockQ5_1, qh);
}

// The stored code of value i of a GGUF block (code_offset added).
template <WeightType T>
std::uint8_t stored_code(const std::byte* block, std::size_t i) {
    if constexpr (T == WeightType::Q8_0) {
        return static_cast<std::uint8_t>(std::to_integer<std::uint8_t>(block[offsetof(BlockQ8_0, qs) + i]) ^ 0x80);
    } else {
        const auto byte = std::to_integer<std::uint8_t>(block[qs_offset<T>() + i % kHalfBlock]);
        const auto nibble = static_cast<std::uint8_t>(i < kHalfBlock ? byte & 0x0F : byte >> 4);
        if constexpr (!blocks32::has_fifth_bit(T))
            return nibble;
        std::uint32_t qh;
        std::memcpy(&qh, block + qh_offset<T>(), sizeof qh);
        return static_cast<std::uint8_t>(nibble | ((qh >> i) & 1) << 4);
    }
}

// Puts the code of value i of row r into the tile's code bytes of its block.
template <WeightType T>
void place_code(std::uint8_t code, std::size_t r, std::size_t i, std::uint8_t* codes) {
    const std::size_t lane_byte = kGroupValues * r + i % kGroupValues;
    if constexpr (T == WeightType::Q8_0) {
        codes[i / kGroupValues * kGroupBytes + lane_byte] = code;
    } else {
        const std::size_t line = i % kHalfBlock / kGroupValues;
        codes[line * kGroupBytes + lane_byte] |= static_cast<std::uint8_t>((code & 0x0F) << (i < kHalfBlock ? 0 : 4));
        if constexpr (blocks32::has_fifth_bit(T))
            codes[blocks32::kNibbleBytes + i / kGroupValues * sizeof(std::uint64_t) + lane_byte / 8] |=
                static_cast<std::uint8_t>((code >> 4) << (lane_byte % 8));
    }
}

template <WeightType T>
void pack_tile(const std::byte* w, std::size_t row_bytes, std::size_t rows, std::size_t cols, std::byte* tile) {
    std::memset(tile, 0, tile_bytes<T>(cols)); // zero rows, padding, and the nibbles ORed in below
    const std::size_t blocks = cols / kQuantBlockValues, block_bytes = row_bytes / blocks;
    auto* codes = reinterpret_cast<std::uint8_t*>(tile);
    std::byte* scales = tile + blocks32::scales_offset(T, cols);
    std::byte* mins = tile + blocks32::mins_offset(T, cols);
    for (std::size_t r = 0; r < rows; ++r)
        for (std::size_t b = 0; b < blocks; ++b) {
            const std::byte* block = w + r * row_bytes + b * block_bytes;
            // Every type's block starts with its scale (f16 d, MXFP4's e);
            // Q4_1's and Q5_1's m follows.
            std::memcpy(scales + b * scale_bytes(T) + r * scale_size(T), block, scale_size(T));
            if constexpr (blocks32::has_min(T))
                std::memcpy(mins + b * scale_bytes(T) + r * scale_size(T), block + offsetof(BlockQ4_1, m),
                            scale_size(T));
            for (std::size_t i = 0; i < kQuantBlockValues; ++i)
                place_code<T>(stored_code<T>(block, i), r, i, codes + b * code_bytes(T));
        }
}

template <WeightType T>
constexpr PackedLayout kLayout{tile_bytes<T>, pack_tile<T>, ActFormat::Q8x32Sums};

} // namespace

const PackedLayout* blocks32_packed_layout(WeightType type) {
    switch (type) {
    case WeightType::Q8_0: return &kLayout<WeightType::Q8_0>;
    case WeightType::Q4_0: return &kLayout<WeightType::Q4_0>;
    case WeightType::Q5_0: return &kLayout<WeightType::Q5_0>;
    case WeightType::Q4_1: return &kLayout<WeightType::Q4_1>;
    case WeightType::Q5_1: return &kLayout<WeightType::Q5_1>;
    case WeightType::IQ4_NL: return &kLayout<WeightType::IQ4_NL>;
    case WeightType::MXFP4: return &kLayout<WeightType::MXFP4>;
    default: return nullptr;
    }
}

PackedGemmFn blocks32_packed_gemm(WeightType type, PackedIsa isa) {
#if defined(KVSCOPE_KERNELS_AVX512VNNI)
    if (isa == PackedIsa::Avx512Vnni)
        return blocks32::avx512_packed_gemm(type);
#endif
#if defined(KVSCOPE_KERNELS_AVXVNNI)
    if (isa == PackedIsa::AvxVnni)
        return blocks32::avxvnni_packed_gemm(type);
#endif
#if defined(KVSCOPE_KERNELS_AVX2)
    if (isa == PackedIsa::Avx2)
        return blocks32::avx2_packed_gemm(type);
#endif
#if defined(KVSCOPE_KERNELS_NEON)
    if (isa == PackedIsa::Neon)
        return blocks32::neon_packed_gemm(type);
#endif
#if defined(KVSCOPE_KERNELS_NEON_DOTPROD)
    if (isa == PackedIsa::NeonDot)
        return blocks32::neondot_packed_gemm(type);
#endif
#if defined(KVSCOPE_KERNELS_NEON_I8MM)
    if (isa == PackedIsa::NeonI8mm)
        return blocks32::i8mm_packed_gemm(type);
#endif
    (void)type;
    (void)isa;
    return {};
}

} // namespace kvscope::kernels::cpu::detail
