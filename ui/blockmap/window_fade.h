#pragma once

#include <cstddef>
#include <vector>

#include "engine/kv/kv_ids.h"
#include "engine/kv/pool_snapshot.h"

namespace kvscope::ui {

class SnapshotReplay;

// When each block a sliding window let go of went back to the pool, on the
// snapshots' own clock (EngineSnapshot::time_s), and how strongly a block
// map still marks it: fully when just freed, fading to nothing over
// kSeconds. Qt-free, so the fade is a pure function of the snapshots (and
// of the time asked about), the same live and in the replay.
//
// A block's free time is the first observed snapshot that shows it
// left_window after one that did not. Blocks already left_window in the
// first snapshot observed were freed at an unknown, earlier time: they get
// no mark.
class WindowFade {
public:
    static constexpr double kSeconds = 1.5;

    // Follows the pool to the next snapshot, taken at `time_s`. A snapshot
    // earlier than the last observed one, or of another pool size, is
    // another engine: what was known is forgotten first.
    void observe(const PoolSnapshot& pool, double time_s);
    void clear();

    // 1 when freed at now_s, falling linearly to 0 at kSeconds later; 0 for
    // a block not left_window in the last observed snapshot (or unknown).
    double strength(BlockId block, double now_s) const;
    // Whether any block still has a mark at now_s: a map animating the fade
    // can stop once it is false.
    bool fading(double now_s) const { return latest_freed_s_ >= 0 && now_s - latest_freed_s_ < kSeconds; }
    double lastTime() const { return last_time_s_; }

private:
    static constexpr double kNotLeft = -2.0; // not left_window in the last snapshot
    static constexpr double kEarlier = -1.0; // left_window already in the first snapshot observed

    std::vector<double> freed_at_s_; // per block
    double last_time_s_ = -1.0;      // < 0: nothing observed
    double latest_freed_s_ = -1.0;
};

// The fade as it stood when the replay's index-th snapshot was taken, from
// the snapshots kept before it (those within WindowFade::kSeconds of it, and
// the one just before them as the starting point).
WindowFade fadeAt(const SnapshotReplay& replay, std::size_t index);

} // namespace kvscope::ui
