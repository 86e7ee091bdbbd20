// net/attach: one vLLM rank's prefix cache as its KV events describe it:
// the set of cached full blocks, by hash, each chained to its parent hash,
// so that the blocks of one cached prefix form a chain from a root (a block
// whose parent is not cached) down. Events carry no physical block ids, so
// this is a forest of hashes, not a block map.
//
// The map holds the GPU prefix cache (medium none or "GPU"); events for
// other media (CPU offload) are counted and otherwise ignored. Events are
// deltas: blocks cached before the subscriber attached, or stored in a
// batch that was lost, are unknown until the cache is cleared; their
// removals are counted as removals of unknown blocks.
//
// Bounded: at most max_blocks blocks are held; storing one more drops the
// oldest stored and counts it in `evicted` (a hostile or runaway publisher
// cannot grow memory without bound). apply() is O(hashes in the batch);
// the chain figures cost O(blocks) and are computed on demand, once per
// change, when sample() is called.
#pragma once

#include <cstddef>
#include <cstdint>
#include <list>
#include <optional>
#include <unordered_map>

#include "net/attach/kv_events.h"
#include "net/attach/remote_sample.h"

namespace kvscope::attach {

class PrefixCacheMap {
public:
    static constexpr std::size_t kDefaultMaxBlocks = 1'000'000;
    static constexpr std::size_t kMaxChainLengths = 64; // PrefixCacheSample::chain_lengths

    explicit PrefixCacheMap(std::size_t max_blocks = kDefaultMaxBlocks);

    void apply(const KvEventBatch& batch);
    // Forgets every block (a resync after lost batches); counts no event.
    void forget_all();

    // blocks, chains, longest_chain, chain_lengths, stored, removed and
    // cleared; the subscriber's fields are left at their defaults.
    PrefixCacheSample sample() const;

    std::size_t size() const { return blocks_.size(); }
    bool contains(BlockHash hash) const { return blocks_.contains(hash); }
    std::optional<BlockHash> parent_of(BlockHash hash) const; // nullopt also when not cached
    std::uint64_t evicted() const { return evicted_; }                 // dropped at the cap
    std::uint64_t unknown_removals() const { return unknown_removals_; } // removed but never seen stored
    std::uint64_t other_medium_blocks() const { return other_medium_; } // stored or removed on another medium

private:
    struct Node {
        std::optional<BlockHash> parent;
        std::list<BlockHash>::iterator age; // position in oldest_first_
    };
    struct ChainFigures {
        std::uint64_t chains = 0;
        std::uint32_t longest = 0;
        std::vector<std::uint32_t> lengths; // longest first, at most kMaxChainLengths
    };

    void store(const BlockStored& event);
    void remove(const BlockRemoved& event);
    void clear();
    void put(BlockHash hash, std::optional<BlockHash> parent);
    ChainFigures compute_chains() const;

    std::size_t max_blocks_;
    std::unordered_map<BlockHash, Node> blocks_;
    std::list<BlockHash> oldest_first_;
    std::uint64_t stored_ = 0, removed_ = 0, cleared_ = 0;
    std::uint64_t evicted_ = 0, unknown_removals_ = 0, other_medium_ = 0;
    mutable std::optional<ChainFigures> chains_; // nullopt: changed since last computed
};

} // namespace kvscope::attach
