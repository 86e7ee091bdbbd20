#pragma once

#include <cstddef>

#include "engine/kv/kv_layout.h"
#include "engine/kv/pool_snapshot.h"

namespace kvscope {

// Contiguous allocation's policy, in one place: a sequence that may grow
// to `max_tokens` tokens (prompt + max_new_tokens) reserves them as whole
// blocks, one run per KV cache group, the moment it is admitted; a
// sliding-window group that frees reserves only its window and a chunk
// (KvLayout::group_blocks), a ring its positions wrap around.
// KvCacheManager allocates by it and contiguous_counterfactual replays it.
std::size_t contiguous_reservation_blocks(const KvLayout& layout, std::size_t group, std::size_t max_tokens,
                                          std::size_t chunk_tokens);

// What a pre-vLLM allocator would waste holding the same sequences as a
// pool: each reserves contiguous_reservation_blocks for its max_tokens and
// shares nothing. Waste is counted with fragmentation.h's definitions
// (sequence_waste):
//   internal  empty slots of the blocks that hold the sequence's tokens
//   reserved  blocks reserved for tokens not generated yet
// External fragmentation depends on where earlier requests were placed,
// which a snapshot does not record, so it is left out rather than guessed.
// Sequences swapped out hold no pool memory and are skipped.
struct ContiguousCounterfactual {
    std::size_t sequences = 0;
    std::size_t token_slots = 0;
    std::size_t internal_waste_slots = 0;
    std::size_t reserved_waste_slots = 0;
    std::size_t reserved_blocks = 0; // what the reservations need
    std::size_t pool_blocks = 0;     // what the pool has
    std::size_t pool_slots = 0;

    // Shares of the pool; above 1 when the reservations would not even fit.
    double internal_waste() const { return share(internal_waste_slots); }
    double reserved_waste() const { return share(reserved_waste_slots); }
    bool fits() const { return reserved_blocks <= pool_blocks; }

private:
    double share(std::size_t n) const {
        return pool_slots ? static_cast<double>(n) / static_cast<double>(pool_slots) : 0.0;
    }
};

ContiguousCounterfactual contiguous_counterfactual(const PoolSnapshot& pool);

} // namespace kvscope
