// Q4_K, Q5_K and IQ4_XS tiles: the layout (drawn in packed_q4k_q5k.h, next to the
// offsets the kernels share), packing from GGUF rows, and the choice of
// kernel per instruction set.
#include "kernels/cpu/packed_q4k_q5k.h"

#include <cstring>

#include "kernels/cpu/k_quant_scales.h"
#include "kernels/cpu/quant_blocks.h"

namespace kvscope::kernels::cpu::detail {
namespace {

using L = KTileLayout;

// One super-block of one GGUF row, codes unpacked: q[v] 0..15 and, for
// Q5_K, its fifth bit h[v] (value v = 0..255 of the super-block).
struct KCodes {
    std::uint16_t d, dmin;
    KScales scales;
    std::uint8_t q[kSuperBlockValues];
    std::uint8_t h[kSuperBlockValues];
};

// quant_blocks.h: chunk c of qs holds values 64c + l in its low nibbles
// and 64c + 32 + l in its high ones (l < 32); the fifth bit of value
// 32j + l is bit j of qh[l].
template <typename Block>
void unpack_codes(const std::byte* src, KCodes& c) {
    Block block;
    std::memcpy(&block, src, sizeof block);
    c.d = block.d;
    c.dmin = block.dmin;
    c.scales = unpack_k_scales(block.scales);
    for (std::size_t chunk = 0; chunk < 4; ++chunk)
        for (std::size_t l = 0; l < 32; ++l) {
            c.q[64 * chunk + l] = block.qs[32 * chunk + l] & 0x0F;
            c.q[64 * chunk + 32 + l] = block.qs[32 * chunk + l] >> 4;
        }
    if constexpr (sizeof(Block) == sizeof(BlockQ5_K))
        for (std::size_t j = 0; j < 8; ++j)
            for (std::size_t l = 0; l < 32; ++l)
                c.h[32 * j + l] = (block.qh[l] >> j) & 1;
}

// Row r's super-block into the tile's super-block at `t`.
void place_row(const KCodes& c, std::size_t r, bool q5, std::byte* t) {
    std::memcpy(t + L::kD + 2 * r, &c.d, 2);
    std::memcpy(t + L::kDmin + 2 * r, &c.dmin, 2);
    auto* u = reinterpret_cast<std::uint8_t*>(t);
    for (std::size_t j = 0; j < L::kSubBlocks; ++j) {
        u[L::kScales + kPackedRows * j + r] = c.scales.scale[j];
        u[L::kMins + kPackedRows * j + r] = c.scales.min[j];
        for (std::size_t g = 0; g < L::kGroups; ++g)
            for (std::size_t i = 0; i < 4; ++i) {
                const std::size_t v = 32 * j + 8 * g + i;
                u[L::kQs + j * L::kQsSubBlock + g * kPackedRows * 4 + 4 * r + i] =
                    static_cast<std::uint8_t>(c.q[v] | c.q[v + 4] << 4);
                if (q5)
                    u[L::kQh + j * L::kQhSubBlock + 4 * r + i] |=
                        static_cast<std::uint8_t>(c.h[v] << (2 * g) | c.h[v + 4] << (2 * g + 1));
            }
    }
}

template <typename Block>
std::size_t tile_bytes(std::size_t cols) {
    return cols / kSuperBlockValues * L::super_block_bytes(sizeof(Block) == sizeof(BlockQ5_K));
}

template <typename Block>
void pack_tile(const std::byte* w, std::size_t row_bytes, std::size_t rows, std::size_t cols, std::byte* tile) {
    constexpr bool q5 = sizeof(Block) == sizeof(BlockQ5_K);
    std::memset(tile, 0, tile_bytes<Block>(cols)); // zero rows, and the qh bits OR-ed in
    KCodes codes{};
    for (std::size_t b = 0; b < cols / kSuperBlockValues; ++b)
        for (std::size_t r = 0; r < rows; ++r) {
            unpack_codes<Block>(w + r * row_bytes + b * sizeof(Block), codes);
            place_row(codes, r, q5, tile + b * L::super_block_bytes(q5));
        }
}

// IQ4_XS: the nibbles as Q4_K's, byte i of row r's group g of sub-block j
// holding values 32j + 8g + i (low) and 32j + 8g + 4 + i (high).
void place_iq4xs_row(const BlockIQ4_XS& block, std::size_t r, std::byte* t) {
    using X = Iq4xsTileLayout;
    std::memcpy(t + L::kD + 2 * r, &block.d, 2);
    int scales[8];
    unpack_iq4xs_scales(block, scales);
    auto* u = reinterpret_cast<std::uint8_t*>(t);
    const auto code = [&](std::size_t v) { // value v's table index
        const std::uint8_t byte = block.qs[16 * (v / 32) + v % 16];
        return static_cast<std::uint8_t>(v % 32 < 16 ? byte & 0x0F : byte >> 4);
    };
    for (std::size_t j = 0; j < L::kSubBlocks; ++j) {
        u[X::kScales + kPackedRows * j + r] = static_cast<std::uint8_t>(static_cast<std::int8_t>(scales[j]));
        for (std::size_t g = 0; g < L::kGroups; ++g)
            for (std::size_t i = 0; i < 4; ++i) {
                const std::size_t v = 32 * j + 8 * g + i;
                u[X::kQs + j * L::kQsSubBlock + g * kPackedRows * 4 + 4 * r + i] =
                    static_cast<std::uint8_t>(code(v) | code(v + 4) << 4);
            }
    }
}

std::size_t iq4xs_tile_bytes(std::size_t cols) { return cols / kSuperBlockValues * Iq4xsTileLayout::kSuperBlockBytes; }

void pack_iq4xs_tile(const std::byte* w, std::size_t row_bytes, std::size_t rows, std::size_t cols, std::byte* tile) {
    std::memset(tile, 0, iq4xs_tile_bytes(cols)); // zero rows and the padding
    for (std::size_t b = 0; b < cols / kSuperBlockValues; ++b)
        for (std::size_t r = 0; r < rows; ++r) {
            BlockIQ4_XS block;
            std::memcpy(&block, w + r * row_bytes + b * sizeof block, sizeof block);
            place_iq4xs_row(block, r, tile + b * Iq4xsTileLayout::kSuperBlockBytes);
        }
}

const PackedLayout kQ4K{tile_bytes<BlockQ4_K>, pack_tile<BlockQ4_K>, ActFormat::Q8x256};
const PackedLayout kIq4Xs{iq4xs_tile_bytes, pack_iq4xs_tile, ActFormat::Q8x256};
const PackedLayout kQ5K{tile_bytes<BlockQ5_K>, pack_tile<BlockQ5_K>, ActFormat::Q8x256};

} // namespace

const PackedLayout* q4k_q5k_packed_layout(WeightType type) {
    switch (type) {
    case WeightType::Q4_K: return &kQ4K;
    case WeightType::Q5_K: return &kQ5K;
    case WeightType::IQ4_XS: return &kIq4Xs;
    default: return nullptr;
    }
}

PackedGemmFn q4k_q5k_packed_gemm(WeightType type, PackedIsa isa) {
    KFormat format;
    switch (type) {
    case WeightType::Q4_K: format = KFormat::Q4K; break;
    case WeightType::Q5_K: format = KFormat::Q5K; break;
    case WeightType::IQ4_XS: format = KFormat::IQ4XS; break;
    default: return {};
    }
    switch (isa) {
#if defined(KVSCOPE_KERNELS_AVX512VNNI)
    case PackedIsa::Avx512Vnni: return q4k_q5k_avx512_gemm(format);
#endif
#if defined(KVSCOPE_KERNELS_AVXVNNI)
    case PackedIsa::AvxVnni: return q4k_q5k_avxvnni_gemm(format);
#endif
#if defined(KVSCOPE_KERNELS_AVX2)
    case PackedIsa::Avx2: return q4k_q5k_avx2_gemm(format);
#endif
#if defined(KVSCOPE_KERNELS_NEON_DOTPROD)
    case PackedIsa::NeonDot: return q4k_q5k_neondot_gemm(format);
#endif
#if defined(KVSCOPE_KERNELS_NEON)
    case PackedIsa::Neon: return q4k_q5k_neon_gemm(format);
#endif
    default: (void)format; return {};
    }
}

} // namespace kvscope::kernels::cpu::detail
