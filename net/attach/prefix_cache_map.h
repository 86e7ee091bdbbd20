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
// A hybrid model's KV cache groups (vLLM's group_idx) each cache their own
// blocks under the same hashes (vLLM keys its cache by hash and group), so
// a block here is a (group, hash) pair, chained to its parent in the same
// group; events without a group are group 0's.
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
#include <map>
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

    // blocks, chains, longest_chain, chain_lengths, groups, stored, removed
    // and cleared; the subscriber's fields are left at their defaults.
    PrefixCacheSample sample() const;

    std::size_t size() const { return blocks_.size(); }
    bool contains(BlockHash hash, std::int64_t group = 0) const { return blocks_.contains({group, hash}); }
    // nullopt also when not cached
    std::optional<BlockHash> parent_of(BlockHash hash, std::int64_t group = 0) const;
    std::uint64_t evicted() const { return evicted_; }                 // dropped at the cap
    std::uint64_t unknown_removals() const { return unknown_removals_; } // removed but never seen stored
    std::uint64_t other_medium_blocks() const { return other_medium_; } // stored or removed on another medium

private:
    struct Key {
        std::int64_t group = 0;
        BlockHash hash = 0;
        bool operator==(const Key&) const = default;
    };
    struct KeyHash {
        std::size_t operator()(const Key& k) const {
            return std::hash<BlockHash>{}(k.hash) ^ (std::hash<std::int64_t>{}(k.group) * 0x9E3779B97F4A7C15ULL);
        }
    };
    struct Node {
        std::optional<BlockHash> parent; // in the same group
        std::list<Key>::iterator age;    // position in oldest_first_
    };
    struct GroupFigures {
        std::uint64_t blocks = 0, chains = 0;
        std::uint32_t longest = 0;
    };
    struct ChainFigures {
        std::uint64_t chains = 0;
        std::uint32_t longest = 0;
        std::vector<std::uint32_t> lengths; // longest first, at most kMaxChainLengths
        std::map<std::int64_t, GroupFigures> groups;
    };
    // What a group's BlockStored events said of it last.
    struct GroupSpec {
        std::optional<std::string> kind;
        std::optional<std::int64_t> sliding_window;
    };

    void store(const BlockStored& event);
    void remove(const BlockRemoved& event);
    void clear();
    void put(const Key& key, std::optional<BlockHash> parent);
    ChainFigures compute_chains() const;

    std::size_t max_blocks_;
    std::unordered_map<Key, Node, KeyHash> blocks_;
    std::list<Key> oldest_first_;
    std::map<std::int64_t, GroupSpec> groups_; // every group an event named
    std::uint64_t stored_ = 0, removed_ = 0, cleared_ = 0;
    std::uint64_t evicted_ = 0, unknown_removals_ = 0, other_medium_ = 0;
    mutable std::optional<ChainFigures> chains_; // nullopt: changed since last computed
};

} // namespace kvscope::attach
