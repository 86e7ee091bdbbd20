#include "ui/blockmap/window_fade.h"

#include <algorithm>

#include "ui/blockmap/snapshot_replay.h"

namespace kvscope::ui {

void WindowFade::clear() {
    freed_at_s_.clear();
    last_time_s_ = -1.0;
    latest_freed_s_ = -1.0;
}

void WindowFade::observe(const PoolSnapshot& pool, double time_s) {
    const bool first = last_time_s_ < 0 || time_s < last_time_s_ || pool.blocks.size() != freed_at_s_.size();
    if (first) {
        clear();
        freed_at_s_.assign(pool.blocks.size(), kNotLeft);
    }
    for (std::size_t b = 0; b < pool.blocks.size(); ++b) {
        double& freed = freed_at_s_[b];
        if (!pool.blocks[b].left_window) {
            freed = kNotLeft;
        } else if (freed == kNotLeft) {
            freed = first ? kEarlier : time_s;
            if (!first)
                latest_freed_s_ = time_s;
        }
    }
    last_time_s_ = time_s;
}

double WindowFade::strength(BlockId block, double now_s) const {
    if (block >= freed_at_s_.size() || freed_at_s_[block] < 0)
        return 0.0;
    const double age = std::max(0.0, now_s - freed_at_s_[block]);
    return std::max(0.0, 1.0 - age / kSeconds);
}

WindowFade fadeAt(const SnapshotReplay& replay, std::size_t index) {
    WindowFade fade;
    if (index >= replay.size())
        return fade;
    const double shown = replay.at(index)->time_s;
    std::size_t first = index;
    while (first > 0 && shown - replay.at(first - 1)->time_s < WindowFade::kSeconds)
        --first;
    if (first > 0)
        --first; // the starting point: what was already left behind then gets no mark
    for (std::size_t i = first; i <= index; ++i)
        if (const auto& s = replay.at(i); s->pool)
            fade.observe(*s->pool, s->time_s);
    return fade;
}

} // namespace kvscope::ui
