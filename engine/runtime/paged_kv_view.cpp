#include "engine/runtime/paged_kv_view.h"

namespace kvscope {

namespace cpu = kernels::cpu;

cpu::KvElem to_kv_elem(KvDtype dtype) {
    switch (dtype) {
    case KvDtype::F32: return cpu::KvElem::F32;
    case KvDtype::F16: return cpu::KvElem::F16;
    case KvDtype::BF16: return cpu::KvElem::BF16;
    case KvDtype::Fp8E4M3: return cpu::KvElem::Fp8E4M3;
    case KvDtype::Int8: return cpu::KvElem::Int8;
    case KvDtype::Int4: return cpu::KvElem::Int4;
    case KvDtype::Int4Kivi: return cpu::KvElem::Int4Kivi;
    case KvDtype::Int2Kivi: return cpu::KvElem::Int2Kivi;
    }
    return cpu::KvElem::F32;
}

cpu::PagedKv paged_kv_view(const KvLayout& layout, std::uint32_t layer, std::byte* pool, std::size_t n_blocks,
                           const float* fixed_scales) {
    const KvGeometry& g = layout.geometry();
    cpu::PagedKv p;
    p.pool = pool;
    p.n_blocks = n_blocks;
    p.bytes_per_block = layout.bytes_per_block();
    p.k_offset = layout.k_offset(layer, 0, 0);
    p.v_offset = layout.v_offset(layer, 0, 0);
    p.head_stride = layout.value_head_stride();
    p.slot_stride = layout.value_slot_stride();
    p.block_size = layout.block_size();
    p.elem = to_kv_elem(layout.dtype());
    p.n_kv_heads = g.n_kv_heads;
    p.head_dim = g.head_dim;
    p.k_scale = {layout.k_scale_offset(layer, 0, 0), layout.k_head_scale_bytes(), layout.k_row_scale_bytes()};
    p.v_scale = {layout.v_scale_offset(layer, 0, 0), layout.v_head_scale_bytes(), layout.v_row_scale_bytes()};
    if (fixed_scales)
        p.fixed_scales = fixed_scales + layout.fixed_scale_index(layer);
    if (seals_blocks(layout.dtype())) {
        const KvLayout tail = layout.tail_layout();
        p.tail = {tail.k_offset(layer, 0, 0), tail.v_offset(layer, 0, 0), tail.value_head_stride(),
                  tail.value_slot_stride()};
    }
    return p;
}

} // namespace kvscope
