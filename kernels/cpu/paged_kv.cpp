#include "kernels/cpu/paged_kv.h"

#include <stdexcept>
#include <string>

namespace kvscope::kernels::cpu {

std::size_t kv_elem_bytes(KvElem elem) { return elem == KvElem::F16 ? 2 : 4; }

void check_paged_kv(const PagedKv& kv) {
    const auto fail = [](const std::string& what) {
        throw std::invalid_argument("paged KV description: " + what);
    };
    if (kv.pool == nullptr || kv.n_blocks == 0)
        fail("no pool");
    if (kv.block_size == 0 || kv.n_kv_heads == 0 || kv.head_dim == 0)
        fail("block_size, n_kv_heads and head_dim must be non-zero");
    const std::size_t row_bytes = kv.head_dim * kv_elem_bytes(kv.elem);
    if (kv.slot_stride < row_bytes || (kv.n_kv_heads > 1 && kv.head_stride < row_bytes))
        fail("slot_stride " + std::to_string(kv.slot_stride) + " / head_stride " +
             std::to_string(kv.head_stride) + " shorter than a row of " + std::to_string(row_bytes) +
             " bytes");
    const std::size_t last_row = (kv.n_kv_heads - 1) * kv.head_stride + (kv.block_size - 1) * kv.slot_stride;
    for (const std::size_t offset : {kv.k_offset, kv.v_offset})
        if (offset + last_row + row_bytes > kv.bytes_per_block)
            fail("rows from offset " + std::to_string(offset) + " run past the block's " +
                 std::to_string(kv.bytes_per_block) + " bytes");
}

} // namespace kvscope::kernels::cpu
