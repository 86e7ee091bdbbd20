#pragma once

#include <cstddef>
#include <cstdint>

#include "engine/kv/kv_dtype.h"

namespace kvscope {

// The shape of a model's KV cache: what every token stores.
struct KvGeometry {
    std::uint32_t n_layers = 0;
    std::uint32_t n_kv_heads = 0;
    std::uint32_t head_dim = 0;
};

// The one source of truth for KV byte accounting and addressing.
//
// A physical block holds `block_size` token slots for every layer. Inside a
// block, layer l occupies bytes [l * layer_bytes(), (l+1) * layer_bytes()),
// laid out as four regions:
//
//   K values  [kv_head][slot][row_value_bytes()]
//   V values  [kv_head][slot][row_value_bytes()]
//   K scales  [kv_head][slot][row_scale_bytes()]
//   V scales  [kv_head][slot][row_scale_bytes()]
//
// A "row" is one head's head_dim values for one token. Row encodings:
//   f32/f16/bf16  4/2/2 bytes per value, no scales
//   fp8-e4m3      1 byte per value; its scales are per layer, head and K/V,
//                 so they live outside the blocks (fixed_bytes())
//   int8          1 byte per value + one f16 scale per row
//   int4          2 values per byte + per group of group_size() values an
//                 f16 scale and an f16 zero point (4 bytes)
// Sizes are exact: no padding anywhere, so bytes_per_token() * block_size ==
// bytes_per_block().
class KvLayout {
public:
    // Throws kvscope::Error on a zero dimension, an odd head_dim or a block
    // size outside 1..1024.
    KvLayout(KvGeometry geometry, KvDtype dtype, std::uint32_t block_size);

    const KvGeometry& geometry() const { return geometry_; }
    KvDtype dtype() const { return dtype_; }
    std::uint32_t block_size() const { return block_size_; }

    // Values per quantization group along head_dim (int4); head_dim otherwise.
    std::uint32_t group_size() const;
    std::uint32_t groups_per_row() const;

    std::size_t row_value_bytes() const;
    std::size_t row_scale_bytes() const;
    std::size_t row_bytes() const { return row_value_bytes() + row_scale_bytes(); }

    std::size_t bytes_per_token() const;        // all layers, K and V, scales included
    std::size_t scale_bytes_per_token() const;  // the scale share of bytes_per_token()
    std::size_t layer_bytes() const;            // one layer's share of a block
    std::size_t bytes_per_block() const;
    std::size_t scale_bytes_per_block() const;
    // Per-pool bytes outside the blocks (fp8's per-head scales), else 0.
    std::size_t fixed_bytes() const;

    // Blocks that `tokens` tokens occupy: ceil(tokens / block_size).
    std::size_t blocks_for_tokens(std::size_t tokens) const;
    // Bytes of those blocks: what a sequence of `tokens` tokens costs when paged.
    std::size_t bytes_for_tokens(std::size_t tokens) const;

    // Strides between value rows of one layer's K (or V) region: from one
    // KV head to the next, and from one slot to the next.
    std::size_t value_head_stride() const { return std::size_t{block_size_} * row_value_bytes(); }
    std::size_t value_slot_stride() const { return row_value_bytes(); }

    // Byte offsets inside a block of the row (layer, kv_head, slot).
    std::size_t k_offset(std::uint32_t layer, std::uint32_t kv_head, std::uint32_t slot) const;
    std::size_t v_offset(std::uint32_t layer, std::uint32_t kv_head, std::uint32_t slot) const;
    std::size_t k_scale_offset(std::uint32_t layer, std::uint32_t kv_head, std::uint32_t slot) const;
    std::size_t v_scale_offset(std::uint32_t layer, std::uint32_t kv_head, std::uint32_t slot) const;

private:
    std::size_t rows_per_layer_block() const; // n_kv_heads * block_size
    std::size_t row_index(std::uint32_t kv_head, std::uint32_t slot) const;

    KvGeometry geometry_;
    KvDtype dtype_;
    std::uint32_t block_size_;
};

} // namespace kvscope
