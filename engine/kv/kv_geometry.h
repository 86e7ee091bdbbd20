#pragma once

#include <cstdint>

namespace kvscope {

// The shape of a model's KV cache: what every token stores. A model gives
// its own (ModelConfig::kv_geometry()); KvLayout turns it into bytes.
struct KvGeometry {
    std::uint32_t n_layers = 0;
    std::uint32_t n_kv_heads = 0;
    std::uint32_t head_dim = 0;
};

// The smallest cache: one layer, one KV head of 8 values. For pools that
// show allocation rather than hold a model's KV (the allocator playground,
// the block map's paint benchmark).
inline constexpr KvGeometry kAllocationDemoGeometry{1, 1, 8};

} // namespace kvscope
