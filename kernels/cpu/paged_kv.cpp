#include "kernels/cpu/paged_kv.h"

#include <stdexcept>
#include <string>

#include "kernels/cpu/kv_codes.h"

namespace kvscope::kernels::cpu {
namespace {

using detail::kKvGroup;

void fail(const std::string& what) { throw std::invalid_argument("paged KV description: " + what); }

// Bytes of the K scales of one row (per-token formats), or of one head in
// one block (KIVI's channel scales).
std::size_t k_scale_bytes_needed(const PagedKv& kv) {
    const std::size_t groups = (kv.head_dim + kKvGroup - 1) / kKvGroup;
    switch (kv.elem) {
    case KvElem::Int8: return 2;
    case KvElem::Int4: return groups * 4;
    case KvElem::Int4Kivi:
    case KvElem::Int2Kivi: return std::size_t{kv.head_dim} * 4;
    default: return 0;
    }
}

// KIVI values carry int4's per-token groups; every other format scales K
// and V alike.
std::size_t v_scale_bytes_needed(const PagedKv& kv) {
    if (kv_elem_seals_blocks(kv.elem))
        return (kv.head_dim + kKvGroup - 1) / kKvGroup * 4;
    return k_scale_bytes_needed(kv);
}

void check_scales(const PagedKv& kv, const KvScaleRegion& region, std::size_t bytes, std::uint32_t slots,
                  const char* name) {
    if (bytes == 0)
        return;
    const std::size_t last = (kv.n_kv_heads - 1) * region.head_stride + (slots - 1) * region.slot_stride;
    if (region.offset + last + bytes > kv.bytes_per_block)
        fail(std::string(name) + " scales from offset " + std::to_string(region.offset) + " run past the block's " +
             std::to_string(kv.bytes_per_block) + " bytes");
}

} // namespace

std::size_t kv_row_value_bytes(KvElem elem, std::uint32_t head_dim) {
    switch (elem) {
    case KvElem::F32: return 4 * std::size_t{head_dim};
    case KvElem::F16:
    case KvElem::BF16: return 2 * std::size_t{head_dim};
    case KvElem::Fp8E4M3:
    case KvElem::Int8: return head_dim;
    case KvElem::Int4:
    case KvElem::Int4Kivi: return (std::size_t{head_dim} + 1) / 2;
    case KvElem::Int2Kivi: return (std::size_t{head_dim} + 3) / 4;
    }
    return 0;
}

void check_paged_kv(const PagedKv& kv) {
    if (kv.pool == nullptr || kv.n_blocks == 0)
        fail("no pool");
    if (kv.block_size == 0 || kv.n_kv_heads == 0 || kv.head_dim == 0)
        fail("block_size, n_kv_heads and head_dim must be non-zero");
    const std::size_t row_bytes = kv_row_value_bytes(kv.elem, kv.head_dim);
    if (kv.slot_stride < row_bytes || (kv.n_kv_heads > 1 && kv.head_stride < row_bytes))
        fail("slot_stride " + std::to_string(kv.slot_stride) + " / head_stride " +
             std::to_string(kv.head_stride) + " shorter than a row of " + std::to_string(row_bytes) +
             " bytes");
    const std::size_t last_row = (kv.n_kv_heads - 1) * kv.head_stride + (kv.block_size - 1) * kv.slot_stride;
    for (const std::size_t offset : {kv.k_offset, kv.v_offset})
        if (offset + last_row + row_bytes > kv.bytes_per_block)
            fail("rows from offset " + std::to_string(offset) + " run past the block's " +
                 std::to_string(kv.bytes_per_block) + " bytes");
    const bool per_channel_keys = kv_elem_seals_blocks(kv.elem);
    check_scales(kv, kv.k_scale, k_scale_bytes_needed(kv), per_channel_keys ? 1 : kv.block_size, "K");
    check_scales(kv, kv.v_scale, v_scale_bytes_needed(kv), kv.block_size, "V");
    if (kv.elem == KvElem::Fp8E4M3 && kv.fixed_scales == nullptr)
        fail("fp8 needs its per-head scales");
    if (per_channel_keys && (kv.tail.slot_stride < 2 * std::size_t{kv.head_dim} ||
                             (kv.n_kv_heads > 1 && kv.tail.head_stride < kv.block_size * kv.tail.slot_stride)))
        fail("the KIVI tail's strides are shorter than its f16 rows");
}

} // namespace kvscope::kernels::cpu
