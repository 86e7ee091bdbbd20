// One layer of a paged KV block pool, described by byte offsets and
// strides so that the kernels need no engine types. The engine fills it
// from KvLayout (engine/kv/kv_layout.h; engine/runtime/paged_kv_view.h does
// it in one place):
//
//   pool            the pool's first byte; block b starts at pool + b * bytes_per_block
//   k_offset        layout.k_offset(layer, 0, 0)
//   v_offset        layout.v_offset(layer, 0, 0)
//   head_stride     layout.k_offset(layer, 1, 0) - layout.k_offset(layer, 0, 0)
//   slot_stride     layout.k_offset(layer, 0, 1) - layout.k_offset(layer, 0, 0)
//
// so the row of (block, kv_head, slot) is at
//   pool + block * bytes_per_block + k_offset + kv_head * head_stride + slot * slot_stride
// (v_offset for V), holding head_dim values of `elem`. Its scales, for the
// formats that have per-block scales, are at
//   pool + block * bytes_per_block + k_scale.offset + kv_head * k_scale.head_stride
//        + slot * k_scale.slot_stride
// (v_scale for V). Row encodings are KvLayout's (kv_layout.h): int4 packs
// value 2i in the low nibble, int2 value 4i in the lowest bits; group
// scales are (f16 scale, f16 zero) pairs per 32 values; KIVI keys have
// slot_stride 0 and per-channel scales: head_dim f16 scales then head_dim
// f16 zero points.
#pragma once

#include <cstddef>
#include <cstdint>

namespace kvscope::kernels::cpu {

// KV storage formats these kernels read and write (KvDtype's, one to one).
enum class KvElem : std::uint8_t { F32, F16, BF16, Fp8E4M3, Int8, Int4, Int4Kivi, Int2Kivi };

// Bytes of one row of head_dim values, scales not included.
std::size_t kv_row_value_bytes(KvElem elem, std::uint32_t head_dim);

// The KIVI formats keep a sequence's partial last block in an f16 tail.
constexpr bool kv_elem_seals_blocks(KvElem elem) { return elem == KvElem::Int4Kivi || elem == KvElem::Int2Kivi; }

// Where one kind of scale lives inside a block (see the header comment).
struct KvScaleRegion {
    std::size_t offset = 0;
    std::size_t head_stride = 0;
    std::size_t slot_stride = 0;
};

// Where one layer's K and V rows live inside a KIVI sequence's tail: one
// block of f16 rows (KvLayout::tail_layout()).
struct KvTailRegion {
    std::size_t k_offset = 0;
    std::size_t v_offset = 0;
    std::size_t head_stride = 0;
    std::size_t slot_stride = 0;
};

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
    KvScaleRegion k_scale; // int8, int4, KIVI
    KvScaleRegion v_scale;
    // fp8: this layer's n_kv_heads K scales then n_kv_heads V scales; a
    // stored byte decodes to its e4m3 value times its head's scale.
    const float* fixed_scales = nullptr;
    KvTailRegion tail; // KIVI
};

// Throws std::invalid_argument unless the description is usable: a pool,
// non-zero sizes, strides of at least one row, every row and scale of the
// layer inside its block, fp8 scales where fp8 needs them.
void check_paged_kv(const PagedKv& kv);

} // namespace kvscope::kernels::cpu
