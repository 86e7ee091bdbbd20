// Q2_K and Q3_K tiles: the layout (drawn in packed_q2k_q3k.h, next to the
// walk that reads it), packing from GGUF rows, and the kernel per
// instruction set.
#include "kernels/cpu/packed_q2k_q3k.h"

#include <cstring>

#include "kernels/cpu/quant_blocks.h"

namespace kvscope::kernels::cpu::detail {
namespace {

using L = Q2kQ3kTileLayout;

// The 2-bit part of value c (0..255) of a Q2_K/Q3_K block: bits 2k of
// qs[32h + l] for c = 128h + 32k + l (quant_blocks.h).
int low2(const std::uint8_t* qs, std::size_t c) { return (qs[32 * (c / 128) + c % 32] >> (2 * (c % 128 / 32))) & 3; }

// Row r's codes of one super-block into the tile's: lo always, the third
// bits when `high` (Q3_K) is given.
void place_codes(const std::uint8_t* qs, const std::uint8_t* hmask, std::size_t r, std::uint8_t* t) {
    for (std::size_t s = 0; s < L::kSubBlocks; ++s)
        for (std::size_t k = 0; k < 4; ++k)
            for (std::size_t j = 0; j < 4; ++j) {
                const std::size_t c = 16 * s + 4 * k + j, at = 4 * r + j;
                t[L::kLow + 64 * s + at] |= static_cast<std::uint8_t>(low2(qs, c) << (2 * k));
                if (hmask != nullptr)
                    t[L::kHigh + 64 * (s / 2) + at] |=
                        static_cast<std::uint8_t>(((hmask[c % 32] >> (c / 32)) & 1) << (k + 4 * (s % 2)));
            }
}

void place_q2k_row(const BlockQ2_K& block, std::size_t r, std::uint8_t* t) {
    std::memcpy(t + L::kD + 2 * r, &block.d, 2);
    std::memcpy(t + L::kDmin + 2 * r, &block.dmin, 2);
    for (std::size_t s = 0; s < L::kSubBlocks; ++s)
        t[L::kScales + kPackedRows * s + r] = block.scales[s];
    place_codes(block.qs, nullptr, r, t);
}

void place_q3k_row(const BlockQ3_K& block, std::size_t r, std::uint8_t* t) {
    std::memcpy(t + L::kD + 2 * r, &block.d, 2);
    int scales[16];
    unpack_q3k_scales(block.scales, scales);
    for (std::size_t s = 0; s < L::kSubBlocks; ++s)
        t[L::kScales + kPackedRows * s + r] = static_cast<std::uint8_t>(static_cast<std::int8_t>(scales[s]));
    place_codes(block.qs, block.hmask, r, t);
}

template <typename Block>
constexpr bool kQ3 = sizeof(Block) == sizeof(BlockQ3_K);

template <typename Block>
std::size_t tile_bytes(std::size_t cols) {
    return cols / kSuperBlockValues * L::super_block_bytes(kQ3<Block>);
}

template <typename Block>
void pack_tile(const std::byte* w, std::size_t row_bytes, std::size_t rows, std::size_t cols, std::byte* tile) {
    std::memset(tile, 0, tile_bytes<Block>(cols)); // zero rows, and the codes OR-ed in
    auto* out = reinterpret_cast<std::uint8_t*>(tile);
    for (std::size_t b = 0; b < cols / kSuperBlockValues; ++b)
        for (std::size_t r = 0; r < rows; ++r) {
            Block block;
            std::memcpy(&block, w + r * row_bytes + b * sizeof block, sizeof block);
            std::uint8_t* t = out + b * L::super_block_bytes(kQ3<Block>);
            if constexpr (kQ3<Block>)
                place_q3k_row(block, r, t);
            else
                place_q2k_row(block, r, t);
        }
}

const PackedLayout kQ2K{tile_bytes<BlockQ2_K>, pack_tile<BlockQ2_K>, ActFormat::Q8x256};
const PackedLayout kQ3K{tile_bytes<BlockQ3_K>, pack_tile<BlockQ3_K>, ActFormat::Q8x256};

} // namespace

const PackedLayout* q2k_q3k_packed_layout(WeightType type) {
    switch (type) {
    case WeightType::Q2_K: return &kQ2K;
    case WeightType::Q3_K: return &kQ3K;
    default: return nullptr;
    }
}

PackedGemmFn q2k_q3k_packed_gemm(WeightType type, PackedIsa isa) {
    if (type != WeightType::Q2_K && type != WeightType::Q3_K)
        return {};
    const bool q3 = type == WeightType::Q3_K;
    switch (isa) {
#if defined(KVSCOPE_KERNELS_AVX512VNNI)
    case PackedIsa::Avx512Vnni: return q2k_q3k_avx512_gemm(q3);
#endif
#if defined(KVSCOPE_KERNELS_AVXVNNI)
    case PackedIsa::AvxVnni: return q2k_q3k_avxvnni_gemm(q3);
#endif
#if defined(KVSCOPE_KERNELS_AVX2)
    case PackedIsa::Avx2: return q2k_q3k_avx2_gemm(q3);
#endif
#if defined(KVSCOPE_KERNELS_NEON_DOTPROD)
    case PackedIsa::NeonDot: return q2k_q3k_neondot_gemm(q3);
#endif
#if defined(KVSCOPE_KERNELS_NEON)
    case PackedIsa::Neon: return q2k_q3k_neon_gemm(q3);
#endif
    default: (void)q3; return {};
    }
}

} // namespace kvscope::kernels::cpu::detail
