#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "engine/kv/allocation_mode.h"
#include "engine/kv/fragmentation.h"
#include "engine/kv/kv_ids.h"
#include "engine/kv/kv_layout.h"
#include "engine/kv/pool_snapshot_types.h"

namespace kvscope {

// One sequence as the KV cache holds it: its KV row. Counts are in tokens
// (slots), block ids index PoolSnapshot::blocks.
struct SequenceInfo {
    SeqId id = 0;
    std::uint32_t num_tokens = 0;           // tokens with a K/V slot
    std::uint32_t capacity_tokens = 0;      // contiguous: prompt + max_new_tokens; paged: blocks * block_size
    std::uint32_t max_tokens = 0;           // prompt + max_new_tokens, as admitted (either mode)
    std::uint32_t cached_prefix_tokens = 0; // taken from the prefix cache at allocation
    bool swapped = false;                   // its blocks are in the host swap pool
    // The blocks it holds, group by group in table order (empty while
    // swapped); group_blocks[g] of them are group g's.
    std::vector<BlockId> blocks;
    std::vector<std::uint32_t> group_blocks;
    std::uint32_t left_window_blocks = 0;   // table entries its window groups have let go of
    std::size_t internal_waste_slots = 0;   // empty slots in its written blocks (0 while swapped)
    std::size_t reserved_waste_slots = 0;   // slots of held blocks not yet written (contiguous)

    bool operator==(const SequenceInfo&) const = default;
};

// An immutable picture of a KV pool at one moment: cheap to hand to another
// thread, never pointing back into the manager. The allocator playground
// shows these alone; an engine's snapshot (engine/engine_snapshot.h) wraps
// one, and docs/snapshot.md gives its JSON form.
struct PoolSnapshot {
    AllocationMode mode = AllocationMode::Paged;
    KvLayout layout;                     // geometry, groups, KV dtype, block size: every byte count derives from it
    std::uint32_t chunk_tokens = 0;      // KvCacheConfig::chunk_tokens: a window group's per-sequence cap counts it
    std::vector<BlockInfo> blocks;       // indexed by BlockId
    std::vector<SeqId> owners;           // see BlockInfo::owner_begin
    std::vector<SequenceInfo> sequences; // one per sequence holding K/V, ascending id
    FragmentationStats fragmentation;
    std::uint32_t swap_blocks_total = 0;   // blocks of the host swap pool
    std::uint32_t swap_blocks_used = 0;
    std::uint64_t prefix_hit_tokens = 0;   // prompt tokens served from the prefix cache
    std::uint64_t prefix_query_tokens = 0; // prompt tokens looked up
    std::uint64_t tail_bytes = 0;          // KIVI: live sequences' f16 tails, outside the pool

    std::span<const SeqId> owners_of(BlockId block) const {
        const BlockInfo& b = blocks.at(block);
        return std::span<const SeqId>(owners).subspan(b.owner_begin, b.owner_count);
    }
};

} // namespace kvscope
