#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "engine/kv/allocation_mode.h"
#include "engine/kv/kv_layout.h"
#include "engine/kv/pool_snapshot_types.h"

namespace kvscope {

// Where the memory of a KV pool goes, in token slots (block_size per block).
// Defined here once; every figure kvscope shows comes from compute_fragmentation.
//
//   token slots      slots holding a token (a shared block counts once)
//   internal waste   empty slots in blocks that hold at least one token: the
//                    unfilled tail of each sequence's last block
//   reserved waste   slots in blocks a sequence holds but has not written yet:
//                    contiguous mode's reservation for tokens still to come
//   external frag.   free blocks that cannot serve the pending contiguous
//                    request because they lie in runs shorter than it needs
//                    (with no pending request: free blocks in runs shorter than
//                    the largest free run). Always 0 in paged mode, where any free block
//                    serves any request: that is what paging buys.
struct FragmentationStats {
    std::size_t total_blocks = 0;
    std::size_t block_size = 0;
    std::size_t used_blocks = 0;        // ref count > 0
    std::size_t free_blocks = 0;        // ref count 0, cached-free included
    std::size_t cached_free_blocks = 0; // free but still holding a prefix-cached block
    std::size_t token_slots = 0;
    std::size_t internal_waste_slots = 0;
    std::size_t reserved_waste_slots = 0;
    std::size_t external_blocks = 0;
    std::size_t largest_free_run = 0;
    std::size_t pending_request_blocks = 0; // 0: none

    std::size_t total_slots() const { return total_blocks * block_size; }
    double block_occupancy() const { return ratio(used_blocks, total_blocks); }
    double token_occupancy() const { return ratio(token_slots, total_slots()); }
    double internal_waste() const { return ratio(internal_waste_slots, total_slots()); }
    double reserved_waste() const { return ratio(reserved_waste_slots, total_slots()); }
    double external_fragmentation() const { return ratio(external_blocks, total_blocks); }

private:
    static double ratio(std::size_t a, std::size_t b) { return b ? static_cast<double>(a) / static_cast<double>(b) : 0.0; }
};

// One sequence's share of the internal and reserved waste when it holds
// `held_blocks` blocks for `tokens` tokens (at least the blocks they fill).
struct SequenceWaste {
    std::size_t internal_slots = 0;
    std::size_t reserved_slots = 0;
};
SequenceWaste sequence_waste(const KvLayout& layout, std::size_t tokens, std::size_t held_blocks);

FragmentationStats compute_fragmentation(std::span<const BlockInfo> blocks, std::uint32_t block_size,
                                         AllocationMode mode, std::size_t pending_request_blocks);

} // namespace kvscope
