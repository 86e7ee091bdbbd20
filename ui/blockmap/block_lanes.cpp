#include "ui/blockmap/block_lanes.h"

#include <algorithm>

namespace kvscope::ui {

bool hasLanes(const PoolSnapshot& pool) { return pool.layout.num_groups() > 1; }

std::size_t laneOfGroup(const std::vector<BlockLane>& lanes, std::size_t g) {
    for (std::size_t i = 0; i < lanes.size(); ++i)
        if (!lanes[i].free_pool &&
            std::find(lanes[i].kind.groups.begin(), lanes[i].kind.groups.end(), g) != lanes[i].kind.groups.end())
            return i;
    return lanes.size();
}

std::vector<BlockLane> blockLanes(const PoolSnapshot& pool) {
    if (!hasLanes(pool))
        return {};
    std::vector<BlockLane> lanes;
    for (KvKind& kind : pool.layout.groups().kinds())
        lanes.push_back({false, std::move(kind), {}, {}, 0});
    lanes.push_back({true, {}, {}, {}, 0});
    std::vector<std::size_t> laneOf(pool.layout.num_groups());
    for (std::size_t g = 0; g < laneOf.size(); ++g)
        laneOf[g] = laneOfGroup(lanes, g);
    std::vector<std::vector<BlockInfo>> infos(lanes.size());
    for (BlockId b = 0; b < pool.blocks.size(); ++b) {
        const BlockInfo& info = pool.blocks[b];
        const bool free = info.state == BlockState::Free || info.group >= laneOf.size();
        const std::size_t lane = free ? lanes.size() - 1 : laneOf[info.group];
        lanes[lane].blocks.push_back(b);
        infos[lane].push_back(info);
        if (info.left_window && info.group < laneOf.size())
            ++lanes[laneOf[info.group]].left_window; // its kind's window let it go, wherever it lies now
    }
    for (std::size_t i = 0; i < lanes.size(); ++i)
        lanes[i].figures = compute_fragmentation(infos[i], pool.layout.block_size(), pool.mode, 0);
    return lanes;
}

} // namespace kvscope::ui
