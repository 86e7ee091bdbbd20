#pragma once

#include <cstddef>
#include <cstdint>

#include "engine/kv/kv_dtype.h"
#include "engine/kv/kv_geometry.h"
#include "engine/kv/kv_groups.h"

namespace kvscope {

// The one source of truth for KV byte accounting and addressing.
//
// A physical block holds `block_size` token slots for the layers of one KV
// cache group (kv_groups.h): layers_per_block() layer slots, all layers of
// a dense model. Inside a block, layer l occupies bytes
// [i * layer_bytes(), (i+1) * layer_bytes()) where i =
// groups().index_in_block(l) (= l for a dense model), laid out as four
// regions:
//
//   K values  [kv_head][slot][row_value_bytes()]
//   V values  [kv_head][slot][row_value_bytes()]
//   K scales  [kv_head][k_head_scale_bytes()]
//   V scales  [kv_head][v_head_scale_bytes()]
//
// A "row" is one head's head_dim values for one token. Per-token scales are
// stored per slot inside a head's scale region ([slot][row scale bytes]).
// Row encodings:
//   f32/f16/bf16  4/2/2 bytes per value, no scales
//   fp8-e4m3      1 byte per value; its scales are per layer, head and K/V,
//                 so they live outside the blocks (fixed_bytes())
//   int8          1 byte per value + one f16 scale per row
//   int4          2 values per byte (value 2i in the low nibble) + per group
//                 of group_size() values an f16 scale and an f16 zero point
//   int4-kivi     values packed as int4 (int2-kivi: 4 per byte, value 4i in
//   int2-kivi     the lowest 2 bits, ceil(head_dim / 4) bytes per row).
//                 V rows carry int4's per-token group scales. K rows carry
//                 none: each head's K scale region holds, per block, head_dim
//                 f16 scales followed by head_dim f16 zero points, one per
//                 channel over the block's slots (KIVI's per-channel keys).
//                 A block is written only when full ("sealed"); until then a
//                 sequence's last block lives in its f16 tail (tail_bytes()).
// Sizes are exact: no padding anywhere. For every dtype but KIVI
// bytes_per_token() * block_size == bytes_per_block(); KIVI's per-block
// channel scales need not divide evenly, so its bytes_per_token() is the
// block's share rounded up, and bytes_per_block() is the exact figure.
//
// Bytes per token count every group (padding layer slots included): what
// a token costs while every group keeps it. A sequence whose window
// groups have freed their old blocks costs less: sequence_blocks().
class KvLayout {
public:
    // Throws kvscope::Error on a zero dimension, an odd head_dim, a block
    // size outside 1..1024, or groups of another number of layers.
    // Without groups: every layer full attention, one group.
    KvLayout(KvGeometry geometry, KvDtype dtype, std::uint32_t block_size);
    KvLayout(KvGeometry geometry, KvDtype dtype, std::uint32_t block_size, KvGroups groups);

    const KvGeometry& geometry() const { return geometry_; }
    KvDtype dtype() const { return dtype_; }
    std::uint32_t block_size() const { return block_size_; }
    const KvGroups& groups() const { return groups_; }
    std::size_t num_groups() const { return groups_.size(); }
    std::uint32_t layers_per_block() const { return groups_.layers_per_block(); }

    // Values per quantization group along head_dim (int4 and the KIVI
    // values): min(32, head_dim), the last group of a row possibly shorter;
    // head_dim otherwise.
    std::uint32_t group_size() const;
    std::uint32_t groups_per_row() const;

    std::size_t row_value_bytes() const;
    std::size_t k_row_scale_bytes() const;     // per-token scales of one K row
    std::size_t v_row_scale_bytes() const;     // per-token scales of one V row
    std::size_t k_channel_scale_bytes() const; // KIVI: per block and head, 4 * head_dim; else 0
    std::size_t k_head_scale_bytes() const;    // one head's K scale region in one block and layer
    std::size_t v_head_scale_bytes() const;

    std::size_t bytes_per_token() const;        // every group, K and V, scales included (KIVI: see above)
    std::size_t scale_bytes_per_token() const;  // the scale share of bytes_per_token()
    std::size_t layer_bytes() const;            // one layer's share of a block
    std::size_t bytes_per_block() const;        // layers_per_block() layers
    std::size_t scale_bytes_per_block() const;
    // Per-pool bytes outside the blocks (fp8's per-head scales), else 0.
    std::size_t fixed_bytes() const;
    // fp8: index into the pool's fixed f32 scales of layer l's first scale;
    // the layer holds n_kv_heads K scales followed by n_kv_heads V scales.
    std::size_t fixed_scale_index(std::uint32_t layer) const;
    // Per live sequence, outside the pool: KIVI's f16 tail, one block laid
    // out as tail_layout() describes; 0 for every other dtype.
    std::size_t tail_bytes() const;
    KvLayout tail_layout() const { return {geometry_, KvDtype::F16, block_size_}; }

    // Blocks that `tokens` tokens occupy in one group's table:
    // ceil(tokens / block_size).
    std::size_t blocks_for_tokens(std::size_t tokens) const;
    // Blocks group g holds at most for a sequence of `tokens` tokens that
    // computes up to `chunk_tokens` a step: all of them for a full group;
    // for a freeing window group of W tokens no more than vLLM's
    // per-request cap, ceil((W - 1 + chunk_tokens) / block_size) + 1 (the
    // last W - 1 computed tokens and the step's chunk, the window's first
    // block possibly partly behind it).
    std::size_t group_blocks(std::size_t g, std::size_t tokens, std::size_t chunk_tokens) const;
    // Blocks of all groups for such a sequence.
    std::size_t sequence_blocks(std::size_t tokens, std::size_t chunk_tokens) const;
    // What one sequence of `tokens` tokens costs when paged and every group
    // keeps every token: its blocks plus, for KIVI, its tail (every live
    // sequence holds one). 0 for no tokens.
    std::size_t bytes_for_tokens(std::size_t tokens) const;
    // The same with window groups capped as group_blocks() says.
    std::size_t bytes_for_sequence(std::size_t tokens, std::size_t chunk_tokens) const;

    // Strides between value rows of one layer's K (or V) region: from one
    // KV head to the next, and from one slot to the next.
    std::size_t value_head_stride() const { return std::size_t{block_size_} * row_value_bytes(); }
    std::size_t value_slot_stride() const { return row_value_bytes(); }

    // Byte offsets inside a block of group_of(layer) of the row (layer,
    // kv_head, slot).
    std::size_t k_offset(std::uint32_t layer, std::uint32_t kv_head, std::uint32_t slot) const;
    std::size_t v_offset(std::uint32_t layer, std::uint32_t kv_head, std::uint32_t slot) const;
    // Byte offsets inside a block of the row's scales (KIVI K: the head's
    // channel scales, whatever the slot).
    std::size_t k_scale_offset(std::uint32_t layer, std::uint32_t kv_head, std::uint32_t slot) const;
    std::size_t v_scale_offset(std::uint32_t layer, std::uint32_t kv_head, std::uint32_t slot) const;

private:
    std::size_t rows_per_layer_block() const; // n_kv_heads * block_size
    std::size_t row_index(std::uint32_t kv_head, std::uint32_t slot) const;
    std::size_t per_token_scale_bytes() const; // int8: scale; int4: groups x (scale, zero)
    std::size_t scale_region_offset(std::uint32_t layer) const;

    std::size_t layer_offset(std::uint32_t layer) const; // index_in_block(layer) * layer_bytes()

    KvGeometry geometry_;
    KvDtype dtype_;
    std::uint32_t block_size_;
    KvGroups groups_;
};

} // namespace kvscope
