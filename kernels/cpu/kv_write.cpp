#include "kernels/cpu/kv_write.h"

#include <stdexcept>
#include <string>

#include "kernels/cpu/kv_row_ops.h"

namespace kvscope::kernels::cpu {

void write_kv(const PagedKv& kv, std::uint32_t block, std::uint32_t slot, const float* k,
              const float* v) {
    check_paged_kv(kv);
    if (block >= kv.n_blocks || slot >= kv.block_size)
        throw std::invalid_argument("write_kv: block " + std::to_string(block) + " slot " +
                                    std::to_string(slot) + " outside a pool of " +
                                    std::to_string(kv.n_blocks) + " blocks of " +
                                    std::to_string(kv.block_size) + " slots");
    if (k == nullptr || v == nullptr)
        throw std::invalid_argument("write_kv: null K or V");
    const auto store = detail::kv_row_ops(kv.elem, simd_path()).store;
    std::byte* base = kv.pool + block * kv.bytes_per_block + slot * kv.slot_stride;
    for (std::uint32_t h = 0; h < kv.n_kv_heads; ++h) {
        const std::size_t head = h * kv.head_stride;
        store(k + std::size_t{h} * kv.head_dim, base + kv.k_offset + head, kv.head_dim);
        store(v + std::size_t{h} * kv.head_dim, base + kv.v_offset + head, kv.head_dim);
    }
}

} // namespace kvscope::kernels::cpu
