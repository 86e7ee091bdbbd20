#include "ui/blockmap/snapshot_replay.h"

#include <algorithm>
#include <utility>

namespace kvscope::ui {

std::size_t snapshot_bytes(const EngineSnapshot& snapshot) {
    std::size_t bytes = sizeof snapshot + snapshot.seqs.size() * sizeof(SeqSnapshot) +
                        snapshot.ended_seqs.size() * sizeof(EndedSeq);
    if (const PoolSnapshot* pool = snapshot.pool.get()) {
        bytes += sizeof *pool + pool->blocks.size() * sizeof(BlockInfo) + pool->owners.size() * sizeof(SeqId);
        for (const SequenceInfo& s : pool->sequences)
            bytes += sizeof s + s.blocks.size() * sizeof(BlockId);
    }
    return bytes;
}

void SnapshotRing::push(std::shared_ptr<const EngineSnapshot> snapshot) {
    bytes_ += snapshot_bytes(*snapshot);
    items_.push_back(std::move(snapshot));
    while (items_.size() > limits_.max_snapshots || (bytes_ > limits_.max_bytes && items_.size() > 1))
        dropOldest();
}

void SnapshotRing::replaceNewest(std::shared_ptr<const EngineSnapshot> snapshot) {
    bytes_ -= snapshot_bytes(*items_.back());
    items_.pop_back();
    push(std::move(snapshot));
}

void SnapshotRing::dropOldest() {
    bytes_ -= snapshot_bytes(*items_.front());
    items_.pop_front();
    ++dropped_;
}

void SnapshotRing::clear() {
    dropped_ += items_.size();
    items_.clear();
    bytes_ = 0;
}

SnapshotBatch SnapshotRing::take() {
    SnapshotBatch batch(std::make_move_iterator(items_.begin()), std::make_move_iterator(items_.end()));
    clear();
    return batch;
}

void SnapshotReplay::add(std::shared_ptr<const EngineSnapshot> snapshot) {
    if (!snapshot)
        return;
    if (!ring_.empty() && snapshot->step == ring_.newest()->step) {
        ring_.replaceNewest(std::move(snapshot));
        return;
    }
    if (!ring_.empty() && snapshot->step < ring_.newest()->step) { // another engine
        ring_.clear();
        picked_.reset();
    }
    ring_.push(std::move(snapshot));
}

void SnapshotReplay::add(const SnapshotBatch& batch) {
    for (const auto& snapshot : batch)
        add(snapshot);
}

void SnapshotReplay::clear() {
    ring_.clear();
    picked_.reset();
}

std::size_t SnapshotReplay::position() const {
    if (ring_.empty())
        return 0;
    if (!picked_)
        return ring_.size() - 1;
    return static_cast<std::size_t>(std::clamp<std::uint64_t>(*picked_, ring_.dropped(),
                                                              ring_.dropped() + ring_.size() - 1) -
                                    ring_.dropped());
}

void SnapshotReplay::pick(std::size_t index) {
    if (ring_.empty() || index + 1 >= ring_.size()) {
        goLive();
        return;
    }
    picked_ = ring_.dropped() + index;
}

std::shared_ptr<const EngineSnapshot> SnapshotReplay::shown() const {
    return ring_.empty() ? nullptr : ring_.at(position());
}

} // namespace kvscope::ui
