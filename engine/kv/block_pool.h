#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <unordered_map>
#include <vector>

#include "engine/kv/kv_ids.h"
#include "engine/kv/pool_memory.h"

namespace kvscope {

// A fixed number of physical KV blocks carved from one allocation (host
// memory, or one cudaMalloc for the CUDA backend: see PoolMemory), and
// their bookkeeping: reference count, filled slots, prefix-cache hash, and
// for a cached-free block the sequence that held it last (so a block map can
// say whose conversation the cache still holds after that sequence ended).
//
// A block with ref count 0 is free. Free blocks sit on one of two lists:
//   free list    plain free blocks, handed out first (FIFO, like vLLM)
//   cached LRU   free blocks whose full content is still registered under
//                its prefix hash; reused on a cache hit, evicted (oldest
//                first) when the free list is empty
class BlockPool {
public:
    BlockPool(std::size_t num_blocks, std::size_t bytes_per_block, MemoryPlace place = MemoryPlace::Host);

    std::size_t num_blocks() const { return meta_.size(); }
    std::size_t bytes_per_block() const { return bytes_per_block_; }
    // Free blocks, evictable cached ones included.
    std::size_t num_free() const { return free_.size + cached_.size; }
    std::size_t num_cached_free() const { return cached_.size; }

    // Takes one free block (ref count 1, fill 0), evicting the least recently
    // used cached block when no plain free block is left. Precondition:
    // num_free() > 0.
    BlockId allocate();
    // First-fit: the lowest run of `count` consecutive free blocks, each taken
    // as by allocate(). nullopt when no such run exists.
    std::optional<BlockId> allocate_run(std::size_t count);
    // Largest run of consecutive free blocks.
    std::size_t largest_free_run() const;
    // The lengths of the runs of consecutive free blocks, lowest first.
    std::vector<std::size_t> free_runs() const;

    // Another holder for an allocated or cached-free block.
    void retain(BlockId block);
    // `holder` lets go of the block; at zero holders it becomes cached-free
    // (remembering `holder` as its last holder) when it has a hash, else
    // plain free.
    void release(BlockId block, SeqId holder);

    std::uint32_t ref_count(BlockId block) const { return meta_[block].ref_count; }
    std::uint32_t fill(BlockId block) const { return meta_[block].fill; }
    void set_fill(BlockId block, std::uint32_t fill) { meta_[block].fill = fill; }

    // Prefix cache: registers a full block's content hash. Returns false (and
    // changes nothing) when another block already holds that hash.
    bool set_hash(BlockId block, std::uint64_t hash);
    std::optional<std::uint64_t> hash(BlockId block) const;
    std::optional<BlockId> find_cached(std::uint64_t hash) const;
    // The sequence that released a cached-free block last; nullopt for any
    // other block (forgotten when the block is revived or evicted).
    std::optional<SeqId> last_holder(BlockId block) const { return meta_[block].last_holder; }
    // How many cached-free blocks name `holder` as their last holder.
    std::uint32_t cached_blocks_of(SeqId holder) const;

    // A block's first byte: a device pointer when place() is Cuda.
    std::byte* data(BlockId block) { return memory_.data() + block * bytes_per_block_; }
    const std::byte* data(BlockId block) const { return memory_.data() + block * bytes_per_block_; }
    MemoryPlace place() const { return memory_.place(); }
    // Copies a block's bytes and fill from `from` (possibly another pool of
    // the same block size) into `to` of this pool.
    void copy_block(const BlockPool& from, BlockId from_block, BlockId to);

    // Throws kvscope::Error on broken list or ref-count bookkeeping.
    void check_invariants() const;

private:
    enum class List : std::uint8_t { None, Free, Cached };
    struct Meta {
        std::uint32_t ref_count = 0;
        std::uint32_t fill = 0;
        std::optional<std::uint64_t> hash;
        std::optional<SeqId> last_holder; // while on the cached list
        List list = List::None;
        BlockId prev = 0, next = 0; // links within `list`
    };
    // An intrusive doubly linked list over Meta::prev/next: O(1) removal of
    // any block, which first-fit runs and cache hits need.
    struct Links {
        List id;
        std::size_t size = 0;
        BlockId head = 0, tail = 0;
    };

    void push_back(Links& list, BlockId block);
    void unlink(BlockId block);
    Links& links_of(List list) { return list == List::Free ? free_ : cached_; }
    void take(BlockId block); // off its free list, ref count 1, fill 0
    void forget_hash(BlockId block);
    void forget_holder(BlockId block);

    std::size_t bytes_per_block_;
    PoolMemory memory_;
    std::vector<Meta> meta_;
    Links free_{List::Free};
    Links cached_{List::Cached};
    std::unordered_map<std::uint64_t, BlockId> by_hash_;
    std::unordered_map<SeqId, std::uint32_t> cached_per_holder_; // no zero counts
};

} // namespace kvscope
