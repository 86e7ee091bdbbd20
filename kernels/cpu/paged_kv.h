// One layer of a paged KV block pool, described by byte offsets and
// strides so that the kernels need no engine types. The engine fills it
// from KvLayout (engine/kv/kv_layout.h):
//
//   pool            the pool's first byte; block b starts at pool + b * bytes_per_block
//   k_offset        layout.k_offset(layer, 0, 0)
//   v_offset        layout.v_offset(layer, 0, 0)
//   head_stride     layout.k_offset(layer, 1, 0) - layout.k_offset(layer, 0, 0)
//   slot_stride     layout.k_offset(layer, 0, 1) - layout.k_offset(layer, 0, 0)
//
// so the row of (block, kv_head, slot) is at
//   pool + block * bytes_per_block + k_offset + kv_head * head_stride + slot * slot_stride
// (v_offset for V), holding head_dim values of `elem`.
#pragma once

#include <cstddef>
#include <cstdint>

namespace kvscope::kernels::cpu {

// KV storage formats these kernels read and write.
enum class KvElem : std::uint8_t { F32, F16 };

std::size_t kv_elem_bytes(KvElem elem);

struct PagedKv {
    std::byte* pool = nullptr;
    std::size_t n_blocks = 0; // blocks in the pool: block ids must be below it
    std::size_t bytes_per_block = 0;
    std::size_t k_offset = 0; // of (kv_head 0, slot 0) of this layer inside a block
    std::size_t v_offset = 0;
    std::size_t head_stride = 0; // bytes between kv heads
    std::size_t slot_stride = 0; // bytes between slots (token rows)
    std::uint32_t block_size = 0; // slots per block
    KvElem elem = KvElem::F32;
    std::uint32_t n_kv_heads = 0;
    std::uint32_t head_dim = 0;
};

// Throws std::invalid_argument unless the description is usable: a pool,
// non-zero sizes, strides of at least one row, and every row of the layer
// inside its block.
void check_paged_kv(const PagedKv& kv);

} // namespace kvscope::kernels::cpu
