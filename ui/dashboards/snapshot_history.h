#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>

#include "engine/engine_snapshot.h"

class QIODevice;

namespace kvscope::ui {

// The figures the time-series dashboards plot, taken from one snapshot.
// Shares are fractions (0..1) of the KV pool.
struct SnapshotFigures {
    std::uint64_t step = 0;
    double time_s = 0;
    double prompt_tokens_per_s = 0; // the engine's, over its recent steps
    double generation_tokens_per_s = 0;
    double busy_s = 0; // seconds inside steps since the engine started
    double last_step_s = 0;
    double last_step_expert_s = 0; // of last_step_s, in mixture-of-experts FFNs; 0 for a dense model
    std::size_t running = 0, waiting = 0, swapped = 0;
    double block_occupancy = 0; // blocks in use / blocks
    double token_occupancy = 0; // slots holding a token / slots
    double internal_waste = 0;
    double reserved_waste = 0;
    double external_fragmentation = 0;
    double contiguous_internal_waste = 0; // the same sequences under contiguous allocation
    double contiguous_reserved_waste = 0;
    std::uint64_t preemptions = 0;
    std::uint64_t completed_requests = 0; // ended normally (EngineSnapshot's counts)
    std::uint64_t aborted_requests = 0;
    std::uint64_t failed_requests = 0;
    std::uint64_t prompt_tokens = 0;
    std::uint64_t generated_tokens = 0;
    double prefix_hit_rate = 0;
    Percentiles ttft, itl;
};

SnapshotFigures figures_of(const EngineSnapshot& snapshot);

// The share (0..1) of a step's seconds spent in mixture-of-experts FFNs
// (router and experts): expert_s / step_s, 0 before the first step. A dense
// model's is 0, as is a backend's that does not measure it.
double expert_share_of_step(double step_s, double expert_s);

// A bounded ring of the figures of the snapshots one engine produced, shared
// by the panels that plot them over time (hand the same instance to each)
// and exported as CSV. Snapshots come at most ~30 times a second, so the
// default capacity holds the last ~10 minutes.
class SnapshotHistory {
public:
    explicit SnapshotHistory(std::size_t capacity = 18000);

    // Appends the snapshot's figures; returns false for one already recorded
    // (several panels sharing this history each pass on the same snapshot).
    // A snapshot older than the last one means the engine was replaced
    // (a new model or configuration): the history starts over.
    bool record(const EngineSnapshot& snapshot);
    void clear() {
        entries_.clear();
        expert_steps_ = false;
    }
    // Whether a step recorded since the history (re)started spent time in
    // mixture-of-experts FFNs: the engine runs a mixture of experts.
    bool hasExpertSteps() const { return expert_steps_; }

    const std::deque<SnapshotFigures>& entries() const { return entries_; }
    std::size_t capacity() const { return capacity_; }

    // One header row, then one row per entry, comma separated, '.' decimals.
    // Returns false when the device cannot be written.
    bool writeCsv(QIODevice& device) const;

private:
    std::size_t capacity_;
    std::deque<SnapshotFigures> entries_;
    bool expert_steps_ = false;
};

} // namespace kvscope::ui
