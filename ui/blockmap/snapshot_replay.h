#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <vector>

#include "engine/engine_snapshot.h"

namespace kvscope::ui {

// Engine snapshots, oldest first.
using SnapshotBatch = std::vector<std::shared_ptr<const EngineSnapshot>>;

// How much snapshot history the app keeps, in count and in bytes (a large
// pool's snapshot is hundreds of KiB): a 256-token turn on a fast model is
// ~260 steps, so one whole turn fits.
struct ReplayLimits {
    std::size_t max_snapshots = 512;
    std::size_t max_bytes = std::size_t{64} << 20;
};

// The memory a snapshot holds, roughly: its block and sequence arrays.
std::size_t snapshot_bytes(const EngineSnapshot& snapshot);

// A bounded run of snapshots, oldest dropped first when either limit is passed.
class SnapshotRing {
public:
    explicit SnapshotRing(ReplayLimits limits = {}) : limits_(limits) {}

    void push(std::shared_ptr<const EngineSnapshot> snapshot);
    void replaceNewest(std::shared_ptr<const EngineSnapshot> snapshot); // precondition: !empty()
    void clear();
    bool empty() const { return items_.empty(); }
    std::size_t size() const { return items_.size(); }
    const std::shared_ptr<const EngineSnapshot>& at(std::size_t i) const { return items_.at(i); }
    const std::shared_ptr<const EngineSnapshot>& newest() const { return items_.back(); }
    std::uint64_t dropped() const { return dropped_; } // pushed, then dropped, cleared or taken
    // Hands the snapshots over, oldest first, and empties the ring.
    SnapshotBatch take();

private:
    void dropOldest();

    ReplayLimits limits_;
    std::deque<std::shared_ptr<const EngineSnapshot>> items_;
    std::size_t bytes_ = 0;
    std::uint64_t dropped_ = 0;
};

// The snapshot history under a block map and the position a replay slider
// picks in it. Live (the default) follows the newest snapshot; a picked
// snapshot stays shown while newer ones arrive, until the user goes live
// again or it is dropped (then the oldest kept one is shown).
//
// Snapshots come from the engine controller: the published ones and, just
// before each, those of the steps it ran without publishing, so a turn too
// fast to watch (256 tokens in 40 ms) can be scrubbed step by step. A
// snapshot of an earlier step than the newest means a new engine: the
// history starts again. One of the same step replaces the newest.
class SnapshotReplay {
public:
    explicit SnapshotReplay(ReplayLimits limits = {}) : ring_(limits) {}

    void add(std::shared_ptr<const EngineSnapshot> snapshot);
    void add(const SnapshotBatch& batch);
    // Forgets every snapshot and goes live: the window shows another engine.
    void clear();

    std::size_t size() const { return ring_.size(); }
    bool live() const { return !picked_; }
    // Index of the shown snapshot, 0 = oldest; size() - 1 while live.
    std::size_t position() const;
    // Picks the index-th snapshot (clamped); picking the newest goes live.
    void pick(std::size_t index);
    void goLive() { picked_.reset(); }
    // What the map shows; null before any snapshot.
    std::shared_ptr<const EngineSnapshot> shown() const;
    const std::shared_ptr<const EngineSnapshot>& at(std::size_t index) const { return ring_.at(index); }

private:
    SnapshotRing ring_;
    std::optional<std::uint64_t> picked_; // counted from the first snapshot ever added, dropped ones included
};

} // namespace kvscope::ui
