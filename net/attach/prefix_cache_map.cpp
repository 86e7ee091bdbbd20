// net/attach: the cached-block forest of one vLLM rank (prefix_cache_map.h).
#include "net/attach/prefix_cache_map.h"

#include <algorithm>
#include <functional>
#include <type_traits>
#include <vector>

namespace kvscope::attach {

PrefixCacheMap::PrefixCacheMap(std::size_t max_blocks) : max_blocks_(std::max<std::size_t>(max_blocks, 1)) {}

void PrefixCacheMap::apply(const KvEventBatch& batch) {
    for (const KvEvent& event : batch.events) {
        std::visit(
            [this](const auto& e) {
                using E = std::decay_t<decltype(e)>;
                if constexpr (std::is_same_v<E, BlockStored>)
                    store(e);
                else if constexpr (std::is_same_v<E, BlockRemoved>)
                    remove(e);
                else
                    clear();
            },
            event);
    }
}

void PrefixCacheMap::forget_all() {
    blocks_.clear();
    oldest_first_.clear();
    chains_.reset();
}

std::optional<BlockHash> PrefixCacheMap::parent_of(BlockHash hash, std::int64_t group) const {
    const auto it = blocks_.find({group, hash});
    return it != blocks_.end() ? it->second.parent : std::nullopt;
}

// Block i's parent is block i-1; the first's is the event's parent.
void PrefixCacheMap::store(const BlockStored& event) {
    if (!is_gpu_medium(event.medium)) {
        other_medium_ += event.hashes.size();
        return;
    }
    const std::int64_t group = event.group_idx.value_or(0);
    GroupSpec& spec = groups_[group];
    if (event.kv_cache_spec_kind)
        spec = {event.kv_cache_spec_kind, event.kv_cache_spec_sliding_window};
    std::optional<BlockHash> parent = event.parent;
    for (const BlockHash hash : event.hashes) {
        put({group, hash}, parent);
        parent = hash;
    }
    stored_ += event.hashes.size();
}

void PrefixCacheMap::remove(const BlockRemoved& event) {
    if (!is_gpu_medium(event.medium)) {
        other_medium_ += event.hashes.size();
        return;
    }
    const std::int64_t group = event.group_idx.value_or(0);
    groups_.try_emplace(group);
    for (const BlockHash hash : event.hashes) {
        const auto it = blocks_.find({group, hash});
        if (it == blocks_.end()) {
            ++unknown_removals_;
            continue;
        }
        oldest_first_.erase(it->second.age);
        blocks_.erase(it);
        chains_.reset();
    }
    removed_ += event.hashes.size();
}

void PrefixCacheMap::clear() {
    forget_all();
    ++cleared_;
}

// A block stored again (vLLM re-caches an evicted hash) counts as newest.
void PrefixCacheMap::put(const Key& key, std::optional<BlockHash> parent) {
    chains_.reset();
    if (const auto it = blocks_.find(key); it != blocks_.end()) {
        it->second.parent = parent;
        oldest_first_.splice(oldest_first_.end(), oldest_first_, it->second.age);
        return;
    }
    if (blocks_.size() >= max_blocks_) {
        blocks_.erase(oldest_first_.front());
        oldest_first_.pop_front();
        ++evicted_;
    }
    oldest_first_.push_back(key);
    blocks_.emplace(key, Node{parent, std::prev(oldest_first_.end())});
}

// Each block's depth below its root, found by walking up parents once per
// block (memoized: O(blocks) in all). A parent cycle, which only a hostile
// publisher can make, is cut where the walk meets itself.
PrefixCacheMap::ChainFigures PrefixCacheMap::compute_chains() const {
    struct Walk {
        std::uint32_t depth = 0; // 0: on the walk now
        Key root;
    };
    std::unordered_map<Key, Walk, KeyHash> walks;
    walks.reserve(blocks_.size());
    std::unordered_map<Key, std::uint32_t, KeyHash> deepest; // by root
    std::vector<Key> path;
    for (const auto& [start, unused] : blocks_) {
        path.clear();
        std::optional<Walk> base; // a block already placed, where the walk ends
        for (Key at = start;;) {
            if (const auto it = walks.find(at); it != walks.end()) {
                if (it->second.depth > 0)
                    base = it->second;
                break; // placed, or on this walk (a cycle: path.back() becomes a root)
            }
            walks.emplace(at, Walk{});
            path.push_back(at);
            const std::optional<BlockHash>& parent = blocks_.at(at).parent;
            if (!parent || !blocks_.contains({at.group, *parent}))
                break;
            at = {at.group, *parent};
        }
        Walk w = base.value_or(Walk{0, path.empty() ? start : path.back()});
        for (auto it = path.rbegin(); it != path.rend(); ++it) {
            ++w.depth;
            walks[*it] = w;
        }
        std::uint32_t& d = deepest[w.root];
        d = std::max(d, w.depth);
    }
    ChainFigures f;
    f.chains = deepest.size();
    for (const auto& [root, depth] : deepest) {
        f.lengths.push_back(depth);
        GroupFigures& g = f.groups[root.group];
        ++g.chains;
        g.longest = std::max(g.longest, depth);
    }
    for (const auto& [key, node] : blocks_)
        ++f.groups[key.group].blocks;
    const std::size_t keep = std::min(f.lengths.size(), kMaxChainLengths);
    std::partial_sort(f.lengths.begin(), f.lengths.begin() + static_cast<std::ptrdiff_t>(keep), f.lengths.end(), std::greater<>());
    f.lengths.resize(keep);
    f.longest = f.lengths.empty() ? 0 : f.lengths.front();
    return f;
}

PrefixCacheSample PrefixCacheMap::sample() const {
    if (!chains_)
        chains_ = compute_chains();
    PrefixCacheSample s;
    s.blocks = blocks_.size();
    s.chains = chains_->chains;
    s.longest_chain = chains_->longest;
    s.chain_lengths = chains_->lengths;
    std::map<std::int64_t, GroupSpec> named = groups_;
    if (named.empty())
        named.try_emplace(0);
    for (const auto& [group, spec] : named) {
        const auto it = chains_->groups.find(group);
        const GroupFigures g = it != chains_->groups.end() ? it->second : GroupFigures{};
        s.groups.push_back({group, spec.kind, spec.sliding_window, g.blocks, g.chains, g.longest});
    }
    s.stored = stored_;
    s.removed = removed_;
    s.cleared = cleared_;
    return s;
}

} // namespace kvscope::attach
