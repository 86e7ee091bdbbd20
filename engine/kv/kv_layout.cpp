#include "engine/kv/kv_layout.h"

#include <algorithm>
#include <string>

#include "engine/core/error.h"

namespace kvscope {
namespace {

constexpr std::uint32_t kInt4GroupSize = 32;
constexpr std::size_t kF16Bytes = 2;
constexpr std::size_t kF32Bytes = 4;

} // namespace

KvLayout::KvLayout(KvGeometry geometry, KvDtype dtype, std::uint32_t block_size)
    : geometry_(geometry), dtype_(dtype), block_size_(block_size) {
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
}

std::uint32_t KvLayout::group_size() const {
    return dtype_ == KvDtype::Int4 ? std::min(kInt4GroupSize, geometry_.head_dim) : geometry_.head_dim;
}

std::uint32_t KvLayout::groups_per_row() const {
    return (geometry_.head_dim + group_size() - 1) / group_size();
}

std::size_t KvLayout::row_value_bytes() const {
    const std::size_t d = geometry_.head_dim;
    switch (dtype_) {
    case KvDtype::F32: return d * kF32Bytes;
    case KvDtype::F16:
    case KvDtype::BF16: return d * kF16Bytes;
    case KvDtype::Fp8E4M3:
    case KvDtype::Int8: return d;
    case KvDtype::Int4: return d / 2; // head_dim is even
    }
    return 0;
}

std::size_t KvLayout::row_scale_bytes() const {
    switch (dtype_) {
    case KvDtype::Int8: return kF16Bytes;                        // scale
    case KvDtype::Int4: return groups_per_row() * 2 * kF16Bytes; // scale + zero per group
    default: return 0;
    }
}

std::size_t KvLayout::bytes_per_token() const {
    return std::size_t{geometry_.n_layers} * 2 * geometry_.n_kv_heads * row_bytes();
}

std::size_t KvLayout::scale_bytes_per_token() const {
    return std::size_t{geometry_.n_layers} * 2 * geometry_.n_kv_heads * row_scale_bytes();
}

std::size_t KvLayout::rows_per_layer_block() const {
    return std::size_t{geometry_.n_kv_heads} * block_size_;
}

std::size_t KvLayout::layer_bytes() const { return 2 * rows_per_layer_block() * row_bytes(); }

std::size_t KvLayout::bytes_per_block() const { return geometry_.n_layers * layer_bytes(); }

std::size_t KvLayout::scale_bytes_per_block() const { return scale_bytes_per_token() * block_size_; }

std::size_t KvLayout::fixed_bytes() const {
    return dtype_ == KvDtype::Fp8E4M3 ? std::size_t{geometry_.n_layers} * 2 * geometry_.n_kv_heads * kF32Bytes
                                      : 0;
}

std::size_t KvLayout::blocks_for_tokens(std::size_t tokens) const {
    return (tokens + block_size_ - 1) / block_size_;
}

std::size_t KvLayout::bytes_for_tokens(std::size_t tokens) const {
    return blocks_for_tokens(tokens) * bytes_per_block();
}

std::size_t KvLayout::row_index(std::uint32_t kv_head, std::uint32_t slot) const {
    return std::size_t{kv_head} * block_size_ + slot;
}

std::size_t KvLayout::k_offset(std::uint32_t layer, std::uint32_t kv_head, std::uint32_t slot) const {
    return layer * layer_bytes() + row_index(kv_head, slot) * row_value_bytes();
}

std::size_t KvLayout::v_offset(std::uint32_t layer, std::uint32_t kv_head, std::uint32_t slot) const {
    return layer * layer_bytes() + (rows_per_layer_block() + row_index(kv_head, slot)) * row_value_bytes();
}

std::size_t KvLayout::k_scale_offset(std::uint32_t layer, std::uint32_t kv_head, std::uint32_t slot) const {
    return layer * layer_bytes() + 2 * rows_per_layer_block() * row_value_bytes() +
           row_index(kv_head, slot) * row_scale_bytes();
}

std::size_t KvLayout::v_scale_offset(std::uint32_t layer, std::uint32_t kv_head, std::uint32_t slot) const {
    return layer * layer_bytes() + 2 * rows_per_layer_block() * row_value_bytes() +
           (rows_per_layer_block() + row_index(kv_head, slot)) * row_scale_bytes();
}

} // namespace kvscope
