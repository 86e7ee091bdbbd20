#include "engine/kv/block_pool.h"

#include <algorithm>
#include <string>

#include "engine/core/error.h"

namespace kvscope {

BlockPool::BlockPool(std::size_t num_blocks, std::size_t bytes_per_block, MemoryPlace place)
    : bytes_per_block_(bytes_per_block),
      memory_(num_blocks * bytes_per_block, place),
      meta_(num_blocks) {
    for (BlockId b = 0; b < num_blocks; ++b)
        push_back(free_, b);
}

void BlockPool::push_back(Links& list, BlockId block) {
    Meta& m = meta_[block];
    m.list = list.id;
    m.prev = list.tail;
    m.next = block;
    if (list.size == 0)
        list.head = block;
    else
        meta_[list.tail].next = block;
    list.tail = block;
    ++list.size;
}

// Links use "points at itself" as the end marker, so no sentinel id is needed.
void BlockPool::unlink(BlockId block) {
    Meta& m = meta_[block];
    Links& list = links_of(m.list);
    const bool is_head = list.head == block;
    const bool is_tail = list.tail == block;
    if (is_head && is_tail) {
        list.head = list.tail = 0;
    } else if (is_head) {
        list.head = m.next;
        meta_[m.next].prev = m.next;
    } else if (is_tail) {
        list.tail = m.prev;
        meta_[m.prev].next = m.prev;
    } else {
        meta_[m.prev].next = m.next;
        meta_[m.next].prev = m.prev;
    }
    --list.size;
    m.list = List::None;
}

void BlockPool::forget_hash(BlockId block) {
    if (auto& h = meta_[block].hash) {
        by_hash_.erase(*h);
        h.reset();
    }
}

void BlockPool::forget_holder(BlockId block) {
    auto& holder = meta_[block].last_holder;
    if (!holder)
        return;
    const auto it = cached_per_holder_.find(*holder);
    if (--it->second == 0)
        cached_per_holder_.erase(it);
    holder.reset();
}

void BlockPool::take(BlockId block) {
    if (meta_[block].list == List::Cached) {
        forget_hash(block); // evicted: its content is about to be overwritten
        forget_holder(block);
    }
    unlink(block);
    meta_[block].ref_count = 1;
    meta_[block].fill = 0;
}

BlockId BlockPool::allocate() {
    if (num_free() == 0)
        throw Error("BlockPool::allocate: no free block (caller must check num_free())");
    const BlockId block = free_.size > 0 ? free_.head : cached_.head;
    take(block);
    return block;
}

std::optional<BlockId> BlockPool::allocate_run(std::size_t count) {
    if (count == 0 || count > num_free())
        return std::nullopt;
    std::size_t run = 0;
    for (BlockId b = 0; b < meta_.size(); ++b) {
        run = meta_[b].ref_count == 0 ? run + 1 : 0;
        if (run == count) {
            const BlockId first = static_cast<BlockId>(b + 1 - count);
            for (BlockId i = first; i <= b; ++i)
                take(i);
            return first;
        }
    }
    return std::nullopt;
}

std::size_t BlockPool::largest_free_run() const {
    std::size_t run = 0, best = 0;
    for (const Meta& m : meta_) {
        run = m.ref_count == 0 ? run + 1 : 0;
        best = std::max(best, run);
    }
    return best;
}

std::vector<std::size_t> BlockPool::free_runs() const {
    std::vector<std::size_t> runs;
    std::size_t run = 0;
    for (const Meta& m : meta_) {
        if (m.ref_count == 0) {
            ++run;
        } else if (run > 0) {
            runs.push_back(run);
            run = 0;
        }
    }
    if (run > 0)
        runs.push_back(run);
    return runs;
}

void BlockPool::retain(BlockId block) {
    Meta& m = meta_[block];
    if (m.ref_count == 0) {
        if (m.list != List::Cached)
            throw Error("BlockPool::retain: block " + std::to_string(block) + " is free and not cached");
        unlink(block); // a prefix-cache hit revives it with its content intact
        forget_holder(block);
    }
    ++m.ref_count;
}

void BlockPool::release(BlockId block, SeqId holder) {
    Meta& m = meta_[block];
    if (m.ref_count == 0)
        throw Error("BlockPool::release: block " + std::to_string(block) + " is already free");
    if (--m.ref_count > 0)
        return;
    if (!m.hash) {
        push_back(free_, block);
        return;
    }
    push_back(cached_, block);
    m.last_holder = holder;
    ++cached_per_holder_[holder];
}

std::uint32_t BlockPool::cached_blocks_of(SeqId holder) const {
    const auto it = cached_per_holder_.find(holder);
    return it == cached_per_holder_.end() ? 0 : it->second;
}

bool BlockPool::set_hash(BlockId block, std::uint64_t hash) {
    if (by_hash_.contains(hash) || meta_[block].hash)
        return false;
    by_hash_.emplace(hash, block);
    meta_[block].hash = hash;
    return true;
}

std::optional<std::uint64_t> BlockPool::hash(BlockId block) const { return meta_[block].hash; }

std::optional<BlockId> BlockPool::find_cached(std::uint64_t hash) const {
    const auto it = by_hash_.find(hash);
    if (it == by_hash_.end())
        return std::nullopt;
    return it->second;
}

void BlockPool::copy_block(const BlockPool& from, BlockId from_block, BlockId to) {
    PoolMemory::copy(from.memory_, from_block * bytes_per_block_, memory_, to * bytes_per_block_, bytes_per_block_);
    meta_[to].fill = from.meta_[from_block].fill;
}

void BlockPool::check_invariants() const {
    auto fail = [](const std::string& what) { throw Error("BlockPool invariant broken: " + what); };
    std::vector<std::uint8_t> seen(meta_.size(), 0);
    for (const Links* list : {&free_, &cached_}) {
        std::size_t walked = 0;
        for (BlockId b = list->head; walked < list->size && walked <= meta_.size(); b = meta_[b].next) {
            if (seen[b]++)
                fail("block " + std::to_string(b) + " is on a free list twice");
            if (meta_[b].list != list->id || meta_[b].ref_count != 0)
                fail("block " + std::to_string(b) + " on a free list has the wrong list tag or a holder");
            if ((list->id == List::Cached) != meta_[b].hash.has_value())
                fail("block " + std::to_string(b) + ": cached list and hash disagree");
            if ((list->id == List::Cached) != meta_[b].last_holder.has_value())
                fail("block " + std::to_string(b) + ": cached list and last holder disagree");
            ++walked;
            if (b == list->tail)
                break;
        }
        if (walked != list->size)
            fail("a free list holds " + std::to_string(walked) + " blocks but counts " + std::to_string(list->size));
    }
    for (BlockId b = 0; b < meta_.size(); ++b)
        if ((meta_[b].ref_count == 0) != (seen[b] == 1))
            fail("block " + std::to_string(b) + " with ref count " + std::to_string(meta_[b].ref_count) +
                 (seen[b] ? " is" : " is not") + " on a free list");
    for (const auto& [h, b] : by_hash_)
        if (meta_[b].hash != h)
            fail("hash index points at block " + std::to_string(b) + " which holds another hash");
    std::unordered_map<SeqId, std::uint32_t> holders;
    for (const Meta& m : meta_)
        if (m.last_holder)
            ++holders[*m.last_holder];
    if (holders != cached_per_holder_)
        fail("the count of cached blocks per last holder disagrees with the blocks");
}

} // namespace kvscope
