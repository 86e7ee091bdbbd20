#pragma once

#include <cstddef>
#include <vector>

#include "engine/kv/fragmentation.h"
#include "engine/kv/kv_groups.h"
#include "engine/kv/kv_ids.h"
#include "engine/kv/pool_snapshot.h"

namespace kvscope::ui {

// A block map's lanes for a pool with KV cache groups (kv_groups.h): one
// lane per kind of attention layer, holding the blocks that kind's groups
// hold or keep prefix-cached (by BlockInfo::group), then one lane for the
// free pool, which every group takes from. Every block is in exactly one
// lane, in ascending BlockId order there, so a lane's size is what that
// kind of layer costs now. A pool of one group has no lanes: its map is
// the plain grid.
//
// Where a block lies in the pool does not matter when paged (any free block
// serves any group); in contiguous mode the runs are the point, and the
// fragmentation panel, not the lanes, shows external fragmentation.
struct BlockLane {
    bool free_pool = false;
    KvKind kind;                   // unset for the free pool
    std::vector<BlockId> blocks;   // ascending
    // The engine's own definitions over the lane's blocks (total_blocks =
    // the lane's size): used, token slots, internal and reserved waste, cached.
    FragmentationStats figures;
    std::size_t left_window = 0;   // blocks its window let go of, not taken since (free or cached)
};

bool hasLanes(const PoolSnapshot& pool); // more than one group
std::vector<BlockLane> blockLanes(const PoolSnapshot& pool);

// Which lane of blockLanes(pool) a block's kind is: the kind holding
// group g. Precondition: g < pool.layout.num_groups().
std::size_t laneOfGroup(const std::vector<BlockLane>& lanes, std::size_t g);

} // namespace kvscope::ui
