#include "engine/kv/kv_layout.h"

#include <algorithm>
#include <string>

#include "engine/core/error.h"

namespace kvscope {
namespace {

constexpr std::uint32_t kGroupSize = 32;
constexpr std::size_t kF16Bytes = 2;
constexpr std::size_t kF32Bytes = 4;

bool has_value_groups(KvDtype dtype) { return dtype == KvDtype::Int4 || seals_blocks(dtype); }

std::size_t bits_per_value(KvDtype dtype) {
    switch (dtype) {
    case KvDtype::F32: return 32;
    case KvDtype::F16:
    case KvDtype::BF16: return 16;
    case KvDtype::Fp8E4M3:
    case KvDtype::Int8: return 8;
    case KvDtype::Int4:
    case KvDtype::Int4Kivi: return 4;
    case KvDtype::Int2Kivi: return 2;
    }
    return 0;
}

std::size_t ceil_div(std::size_t a, std::size_t b) { return (a + b - 1) / b; }

} // namespace

KvLayout::KvLayout(KvGeometry geometry, KvDtype dtype, std::uint32_t block_size)
    : KvLayout(geometry, dtype, block_size, KvGroups::full(std::max(geometry.n_layers, 1u))) {}

KvLayout::KvLayout(KvGeometry geometry, KvDtype dtype, std::uint32_t block_size, KvGroups groups)
    : geometry_(geometry), dtype_(dtype), block_size_(block_size), groups_(std::move(groups)) {
    if (geometry.n_layers == 0 || geometry.n_kv_heads == 0 || geometry.head_dim == 0)
        throw Error("KV geometry needs at least one layer, KV head and head dimension (got " +
                    std::to_string(geometry.n_layers) + " layers, " +
                    std::to_string(geometry.n_kv_heads) + " KV heads, head_dim " +
                    std::to_string(geometry.head_dim) + ")");
    if (geometry.head_dim % 2 != 0)
        throw Error("head_dim must be even (RoPE rotates pairs), got " +
                    std::to_string(geometry.head_dim));
    if (block_size == 0 || block_size > 1024)
        throw Error("block size must be 1..1024 tokens, got " + std::to_string(block_size));
    if (groups_.n_layers() != geometry.n_layers)
        throw Error("KV cache groups cover " + std::to_string(groups_.n_layers()) + " layers, the model has " +
                    std::to_string(geometry.n_layers));
}

std::uint32_t KvLayout::group_size() const {
    return has_value_groups(dtype_) ? std::min(kGroupSize, geometry_.head_dim) : geometry_.head_dim;
}

std::uint32_t KvLayout::groups_per_row() const {
    return (geometry_.head_dim + group_size() - 1) / group_size();
}

std::size_t KvLayout::row_value_bytes() const {
    return ceil_div(std::size_t{geometry_.head_dim} * bits_per_value(dtype_), 8);
}

std::size_t KvLayout::per_token_scale_bytes() const {
    if (dtype_ == KvDtype::Int8)
        return kF16Bytes; // scale
    if (has_value_groups(dtype_))
        return groups_per_row() * 2 * kF16Bytes; // scale + zero per group
    return 0;
}

std::size_t KvLayout::k_row_scale_bytes() const { return seals_blocks(dtype_) ? 0 : per_token_scale_bytes(); }

std::size_t KvLayout::v_row_scale_bytes() const { return per_token_scale_bytes(); }

std::size_t KvLayout::k_channel_scale_bytes() const {
    return seals_blocks(dtype_) ? std::size_t{geometry_.head_dim} * 2 * kF16Bytes : 0;
}

std::size_t KvLayout::k_head_scale_bytes() const {
    return std::size_t{block_size_} * k_row_scale_bytes() + k_channel_scale_bytes();
}

std::size_t KvLayout::v_head_scale_bytes() const { return std::size_t{block_size_} * v_row_scale_bytes(); }

std::size_t KvLayout::bytes_per_token() const { return ceil_div(num_groups() * bytes_per_block(), block_size_); }

std::size_t KvLayout::scale_bytes_per_token() const {
    return ceil_div(num_groups() * scale_bytes_per_block(), block_size_);
}

std::size_t KvLayout::rows_per_layer_block() const {
    return std::size_t{geometry_.n_kv_heads} * block_size_;
}

std::size_t KvLayout::layer_bytes() const {
    return 2 * rows_per_layer_block() * row_value_bytes() +
           std::size_t{geometry_.n_kv_heads} * (k_head_scale_bytes() + v_head_scale_bytes());
}

std::size_t KvLayout::bytes_per_block() const { return layers_per_block() * layer_bytes(); }

std::size_t KvLayout::scale_bytes_per_block() const {
    return std::size_t{layers_per_block()} * geometry_.n_kv_heads * (k_head_scale_bytes() + v_head_scale_bytes());
}

std::size_t KvLayout::fixed_bytes() const {
    return dtype_ == KvDtype::Fp8E4M3 ? std::size_t{geometry_.n_layers} * 2 * geometry_.n_kv_heads * kF32Bytes
                                      : 0;
}

std::size_t KvLayout::fixed_scale_index(std::uint32_t layer) const {
    return std::size_t{layer} * 2 * geometry_.n_kv_heads;
}

std::size_t KvLayout::tail_bytes() const { return seals_blocks(dtype_) ? tail_layout().bytes_per_block() : 0; }

std::size_t KvLayout::blocks_for_tokens(std::size_t tokens) const { return ceil_div(tokens, block_size_); }

std::size_t KvLayout::group_blocks(std::size_t g, std::size_t tokens, std::size_t chunk_tokens) const {
    const std::size_t all = blocks_for_tokens(tokens);
    if (!groups_.frees(g))
        return all;
    return std::min(all, blocks_for_tokens(groups_[g].window - 1 + chunk_tokens) + 1);
}

std::size_t KvLayout::sequence_blocks(std::size_t tokens, std::size_t chunk_tokens) const {
    std::size_t blocks = 0;
    for (std::size_t g = 0; g < num_groups(); ++g)
        blocks += group_blocks(g, tokens, chunk_tokens);
    return blocks;
}

std::size_t KvLayout::bytes_for_tokens(std::size_t tokens) const {
    return tokens == 0 ? 0 : num_groups() * blocks_for_tokens(tokens) * bytes_per_block() + tail_bytes();
}

std::size_t KvLayout::bytes_for_sequence(std::size_t tokens, std::size_t chunk_tokens) const {
    return tokens == 0 ? 0 : sequence_blocks(tokens, chunk_tokens) * bytes_per_block() + tail_bytes();
}

std::size_t KvLayout::row_index(std::uint32_t kv_head, std::uint32_t slot) const {
    return std::size_t{kv_head} * block_size_ + slot;
}

std::size_t KvLayout::layer_offset(std::uint32_t layer) const {
    return std::size_t{groups_.index_in_block(layer)} * layer_bytes();
}

std::size_t KvLayout::k_offset(std::uint32_t layer, std::uint32_t kv_head, std::uint32_t slot) const {
    return layer_offset(layer) + row_index(kv_head, slot) * row_value_bytes();
}

std::size_t KvLayout::v_offset(std::uint32_t layer, std::uint32_t kv_head, std::uint32_t slot) const {
    return layer_offset(layer) + (rows_per_layer_block() + row_index(kv_head, slot)) * row_value_bytes();
}

std::size_t KvLayout::scale_region_offset(std::uint32_t layer) const {
    return layer_offset(layer) + 2 * rows_per_layer_block() * row_value_bytes();
}

std::size_t KvLayout::k_scale_offset(std::uint32_t layer, std::uint32_t kv_head, std::uint32_t slot) const {
    return scale_region_offset(layer) + kv_head * k_head_scale_bytes() + slot * k_row_scale_bytes();
}

std::size_t KvLayout::v_scale_offset(std::uint32_t layer, std::uint32_t kv_head, std::uint32_t slot) const {
    return scale_region_offset(layer) + geometry_.n_kv_heads * k_head_scale_bytes() +
           kv_head * v_head_scale_bytes() + slot * v_row_scale_bytes();
}

} // namespace kvscope
