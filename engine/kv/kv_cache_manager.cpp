#include "engine/kv/kv_cache_manager.h"

#include <algorithm>
#include <cstdio>
#include <string>

#include "engine/kv/contiguous_reservation.h"
#include "engine/kv/prefix_hash.h"

namespace kvscope {
namespace {

std::string str(std::size_t n) { return std::to_string(n); }

std::string percent(double fraction) {
    char text[16];
    std::snprintf(text, sizeof text, "%.0f%%", fraction * 100.0);
    return text;
}

} // namespace

KvCacheManager::KvCacheManager(const KvCacheConfig& config)
    : config_(config),
      pool_(config.num_blocks, config.layout.bytes_per_block(), config.memory),
      swap_pool_(config.swap_blocks, config.layout.bytes_per_block()),
      fixed_scales_(config.layout.fixed_bytes() / sizeof(float), 1.0f) {
    if (config.num_blocks == 0)
        throw KvError("a KV pool needs at least one block");
    if (!(config.watermark >= 0.0 && config.watermark < 1.0))
        throw KvError("the watermark is a fraction of the pool in [0, 1), got " + std::to_string(config.watermark));
}

KvCacheManager::Sequence& KvCacheManager::sequence(SeqId seq) {
    const auto it = seqs_.find(seq);
    if (it == seqs_.end())
        throw KvError("unknown sequence " + std::to_string(seq));
    return it->second;
}

const KvCacheManager::Sequence& KvCacheManager::sequence(SeqId seq) const {
    return const_cast<KvCacheManager*>(this)->sequence(seq);
}

bool KvCacheManager::caching() const {
    return config_.prefix_caching && config_.mode == AllocationMode::Paged;
}

std::size_t KvCacheManager::watermark_blocks() const {
    return static_cast<std::size_t>(config_.watermark * config_.num_blocks);
}

std::uint32_t KvCacheManager::block_size() const { return config_.layout.block_size(); }

// Cache hits stop one token short of the prompt: its last token must still
// run through the model to produce the first output's logits.
std::vector<BlockId> KvCacheManager::prefix_hits(std::span<const TokenId> prompt, PrefixReuse reuse) const {
    std::vector<BlockId> hits;
    if (!caching() || prompt.empty() || reuse == PrefixReuse::Never)
        return hits;
    const std::size_t usable = (prompt.size() - 1) / block_size();
    std::uint64_t parent = kNoParentHash;
    for (std::size_t i = 0; i < usable; ++i) {
        parent = block_hash(parent, prompt.subspan(i * block_size(), block_size()));
        const auto block = pool_.find_cached(parent);
        if (!block)
            break;
        hits.push_back(*block);
    }
    return hits;
}

std::size_t KvCacheManager::blocks_needed(std::span<const TokenId> prompt, std::uint32_t max_new_tokens,
                                          std::span<const BlockId> hits) const {
    const KvLayout& layout = config_.layout;
    if (config_.mode == AllocationMode::Contiguous)
        return contiguous_reservation_blocks(layout, prompt.size() + max_new_tokens);
    // A hit on a cached-free block takes it off the free lists too.
    const auto revived = std::count_if(hits.begin(), hits.end(),
                                       [&](BlockId b) { return pool_.ref_count(b) == 0; });
    return layout.blocks_for_tokens(prompt.size()) - hits.size() + static_cast<std::size_t>(revived);
}

AllocStatus KvCacheManager::can_allocate(std::span<const TokenId> prompt, std::uint32_t max_new_tokens,
                                         PrefixReuse reuse) const {
    if (never_fits(prompt.size(), max_new_tokens))
        return AllocStatus::Never;
    const std::size_t needed = blocks_needed(prompt, max_new_tokens, prefix_hits(prompt, reuse));
    if (pool_.num_free() < needed + watermark_blocks())
        return AllocStatus::Later;
    if (config_.mode == AllocationMode::Contiguous && pool_.largest_free_run() < needed)
        return AllocStatus::Later;
    return AllocStatus::Ok;
}

std::optional<KvRefusal> KvCacheManager::never_fits(std::size_t prompt_tokens, std::size_t max_new_tokens) const {
    const KvLayout& layout = config_.layout;
    const std::size_t lifetime_blocks = layout.blocks_for_tokens(prompt_tokens + max_new_tokens);
    if (prompt_tokens > 0 && lifetime_blocks <= config_.num_blocks &&
        layout.blocks_for_tokens(prompt_tokens) + watermark_blocks() <= config_.num_blocks)
        return std::nullopt;
    KvRefusal r{AllocStatus::Never, prompt_tokens, max_new_tokens, lifetime_blocks, 0, config_.num_blocks,
                watermark_blocks(), {}};
    if (prompt_tokens == 0) {
        r.reason = "a sequence needs at least one prompt token";
        return r;
    }
    r.reason = "request of " + str(prompt_tokens) + " prompt + " + str(max_new_tokens) + " new tokens needs " +
               str(lifetime_blocks) + " blocks of " + str(block_size()) + " tokens but the pool has " +
               str(config_.num_blocks) + " blocks" +
               (r.watermark_blocks ? " (" + str(r.watermark_blocks) + " kept free as watermark)" : "") +
               ": it can never fit";
    return r;
}

std::optional<KvRefusal> KvCacheManager::refusal(std::span<const TokenId> prompt, std::uint32_t max_new_tokens,
                                                 PrefixReuse reuse) const {
    if (std::optional<KvRefusal> never = never_fits(prompt.size(), max_new_tokens))
        return never;
    const AllocStatus status = can_allocate(prompt, max_new_tokens, reuse);
    if (status == AllocStatus::Ok)
        return std::nullopt;
    KvRefusal r{status, prompt.size(), max_new_tokens, blocks_needed(prompt, max_new_tokens, prefix_hits(prompt, reuse)),
                pool_.num_free(), config_.num_blocks, watermark_blocks(), {}};
    const std::string request = str(prompt.size()) + " prompt + " + str(max_new_tokens) + " new tokens";
    if (config_.mode == AllocationMode::Contiguous && r.free_blocks >= r.blocks_needed + r.watermark_blocks) {
        std::vector<BlockInfo> infos = block_infos(nullptr);
        const FragmentationStats f = compute_fragmentation(infos, block_size(), config_.mode, r.blocks_needed);
        r.reason = "contiguous allocation of " + str(r.blocks_needed) + " blocks for " + request + " failed: " +
                   str(f.free_blocks) + " blocks are free but the largest free run is " + str(f.largest_free_run) +
                   " (external fragmentation: " + str(f.external_blocks) + " of " + str(f.total_blocks) +
                   " blocks, " + percent(f.external_fragmentation()) + ")";
        return r;
    }
    r.reason = "request of " + request + " needs " + str(r.blocks_needed) + " free blocks" +
               (r.watermark_blocks ? " plus a watermark of " + str(r.watermark_blocks) : "") + " but only " +
               str(r.free_blocks) + " of " + str(r.total_blocks) + " are free";
    return r;
}

std::vector<BlockId> KvCacheManager::take_blocks(std::size_t count) {
    std::vector<BlockId> blocks(count);
    for (BlockId& b : blocks)
        b = pool_.allocate();
    return blocks;
}

std::vector<BlockId> KvCacheManager::take_run(std::size_t count, const std::string& purpose) {
    const auto first = pool_.allocate_run(count);
    if (!first)
        throw KvError(purpose + " needs a run of " + str(count) + " consecutive free blocks; the largest free run is " +
                      str(pool_.largest_free_run()));
    std::vector<BlockId> run(count);
    for (std::size_t i = 0; i < count; ++i)
        run[i] = static_cast<BlockId>(*first + i);
    return run;
}

std::uint32_t KvCacheManager::allocate(SeqId seq, std::span<const TokenId> prompt, std::uint32_t max_new_tokens,
                                       PrefixReuse reuse) {
    if (seqs_.contains(seq))
        throw KvError("sequence " + std::to_string(seq) + " already exists");
    if (const std::optional<KvRefusal> refused = refusal(prompt, max_new_tokens, reuse)) {
        if (refused->status == AllocStatus::Later)
            pending_request_blocks_ = refused->blocks_needed;
        throw KvError(refused->reason);
    }
    Sequence s;
    s.tokens.assign(prompt.begin(), prompt.end());
    s.tail.resize(config_.layout.tail_bytes());
    s.max_tokens = static_cast<std::uint32_t>(prompt.size()) + max_new_tokens;
    if (config_.mode == AllocationMode::Contiguous) {
        s.capacity_blocks = static_cast<std::uint32_t>(contiguous_reservation_blocks(config_.layout, s.max_tokens));
        s.table = take_run(s.capacity_blocks, "contiguous allocation");
    } else {
        s.table = prefix_hits(prompt, reuse);
        for (BlockId b : s.table) {
            pool_.retain(b);
            s.hashes.push_back(*pool_.hash(b));
        }
        s.cached_prefix_tokens = static_cast<std::uint32_t>(s.table.size() * block_size());
        const std::vector<BlockId> fresh = take_blocks(config_.layout.blocks_for_tokens(prompt.size()) - s.table.size());
        s.table.insert(s.table.end(), fresh.begin(), fresh.end());
    }
    for (std::size_t i = 0; i * block_size() < prompt.size(); ++i)
        pool_.set_fill(s.table[i], static_cast<std::uint32_t>(std::min<std::size_t>(block_size(), prompt.size() - i * block_size())));
    for (std::size_t i = s.hashes.size(); caching() && i < prompt.size() / block_size(); ++i)
        seal_full_block(s, i);
    if (caching() && reuse == PrefixReuse::Allowed) { // a prompt that skipped the lookup asked nothing of it
        prefix_hit_tokens_ += s.cached_prefix_tokens;
        prefix_query_tokens_ += prompt.size();
    }
    pending_request_blocks_ = 0;
    const std::uint32_t cached = s.cached_prefix_tokens;
    seqs_.emplace(seq, std::move(s));
    return cached;
}

// A block just filled: record its chained hash so later prompts can reuse it.
void KvCacheManager::seal_full_block(Sequence& s, std::size_t logical_block) {
    const std::uint64_t parent = logical_block > 0 ? s.hashes[logical_block - 1] : kNoParentHash;
    const auto tokens = std::span<const TokenId>(s.tokens).subspan(logical_block * block_size(), block_size());
    s.hashes.push_back(block_hash(parent, tokens));
    pool_.set_hash(s.table[logical_block], s.hashes.back()); // false: an equal block is cached already
}

bool KvCacheManager::can_append(SeqId seq) const {
    const Sequence& s = sequence(seq);
    if (s.swapped)
        return false;
    const std::size_t pos = s.tokens.size();
    if (config_.mode == AllocationMode::Contiguous)
        return pos < std::size_t{s.capacity_blocks} * block_size();
    const bool needs_block = pos % block_size() == 0 || pool_.ref_count(s.table.back()) > 1;
    return !needs_block || pool_.num_free() > 0;
}

SlotRef KvCacheManager::append(SeqId seq, TokenId token) {
    Sequence& s = sequence(seq);
    if (s.swapped)
        throw KvError("sequence " + std::to_string(seq) + " is swapped out; swap it in before appending");
    const std::size_t pos = s.tokens.size();
    const std::uint32_t slot = static_cast<std::uint32_t>(pos % block_size());
    if (config_.mode == AllocationMode::Contiguous) {
        if (pos >= std::size_t{s.capacity_blocks} * block_size())
            throw KvError("sequence " + std::to_string(seq) + " used up its contiguous reservation of " +
                          str(std::size_t{s.capacity_blocks} * block_size()) + " tokens");
    } else if (slot == 0) {
        if (pool_.num_free() == 0)
            throw KvError("no free KV block for sequence " + std::to_string(seq) + ": all " +
                          str(config_.num_blocks) + " blocks are in use");
        s.table.push_back(pool_.allocate());
    } else if (pool_.ref_count(s.table.back()) > 1) {
        copy_on_write_tail(s, seq);
    }
    const BlockId block = s.table[pos / block_size()];
    pool_.set_fill(block, slot + 1);
    s.tokens.push_back(token);
    if (caching() && slot + 1 == block_size())
        seal_full_block(s, pos / block_size());
    return {block, slot};
}

// The last block is shared and not full: writing into it would change what
// the other holders see, so this sequence gets its own copy first.
void KvCacheManager::copy_on_write_tail(Sequence& s, SeqId seq) {
    const BlockId shared = s.table.back();
    if (pool_.num_free() == 0)
        throw KvError("copy-on-write of shared block " + str(shared) + " for sequence " + std::to_string(seq) +
                      " needs a free block; none is left");
    const BlockId own = pool_.allocate();
    pool_.copy_block(pool_, shared, own);
    pool_.release(shared, seq);
    s.table.back() = own;
}

void KvCacheManager::fork(SeqId parent, SeqId child) {
    if (seqs_.contains(child))
        throw KvError("cannot fork into sequence " + std::to_string(child) + ": it already exists");
    const Sequence& p = sequence(parent);
    if (p.swapped)
        throw KvError("cannot fork sequence " + std::to_string(parent) + " while it is swapped out");
    Sequence c = p;
    c.cached_prefix_tokens = 0;
    if (config_.mode == AllocationMode::Contiguous) {
        // The pre-paging systems had no block sharing: a fork is a full copy.
        c.table = take_run(p.capacity_blocks, "contiguous fork of sequence " + std::to_string(parent));
        for (std::size_t i = 0; i < config_.layout.blocks_for_tokens(p.tokens.size()); ++i)
            pool_.copy_block(pool_, p.table[i], c.table[i]);
    } else {
        for (BlockId b : c.table)
            pool_.retain(b);
    }
    seqs_.emplace(child, std::move(c));
}

void KvCacheManager::release_table(std::vector<BlockId>& table, BlockPool& pool, SeqId holder) {
    // Last block first, so a sequence's tail is reused (or evicted) first.
    for (auto it = table.rbegin(); it != table.rend(); ++it)
        pool.release(*it, holder);
    table.clear();
}

void KvCacheManager::free(SeqId seq) {
    Sequence& s = sequence(seq);
    release_table(s.table, pool_, seq);
    release_table(s.swap_table, swap_pool_, seq);
    seqs_.erase(seq);
}

bool KvCacheManager::can_swap_out(SeqId seq) const {
    const Sequence& s = sequence(seq);
    return !s.swapped && swap_pool_.num_free() >= config_.layout.blocks_for_tokens(s.tokens.size());
}

void KvCacheManager::swap_out(SeqId seq) {
    Sequence& s = sequence(seq);
    if (!can_swap_out(seq))
        throw KvError(s.swapped ? "sequence " + std::to_string(seq) + " is already swapped out"
                                : "swap pool has " + str(swap_pool_.num_free()) + " free blocks; sequence " +
                                      std::to_string(seq) + " needs " +
                                      str(config_.layout.blocks_for_tokens(s.tokens.size())));
    const std::size_t written = config_.layout.blocks_for_tokens(s.tokens.size());
    for (std::size_t i = 0; i < written; ++i) {
        const BlockId host = swap_pool_.allocate();
        swap_pool_.copy_block(pool_, s.table[i], host);
        s.swap_table.push_back(host);
    }
    release_table(s.table, pool_, seq);
    s.swapped = true;
}

AllocStatus KvCacheManager::can_swap_in(SeqId seq) const {
    const Sequence& s = sequence(seq);
    if (!s.swapped)
        return AllocStatus::Never;
    const std::size_t needed =
        config_.mode == AllocationMode::Contiguous ? s.capacity_blocks : s.swap_table.size();
    if (pool_.num_free() < needed + watermark_blocks())
        return AllocStatus::Later;
    if (config_.mode == AllocationMode::Contiguous && pool_.largest_free_run() < needed)
        return AllocStatus::Later;
    return AllocStatus::Ok;
}

void KvCacheManager::swap_in(SeqId seq) {
    Sequence& s = sequence(seq);
    if (can_swap_in(seq) != AllocStatus::Ok)
        throw KvError(s.swapped ? "not enough free blocks to swap sequence " + std::to_string(seq) + " back in (" +
                                      str(pool_.num_free()) + " free)"
                                : "sequence " + std::to_string(seq) + " is not swapped out");
    s.table = config_.mode == AllocationMode::Contiguous
                  ? take_run(s.capacity_blocks, "swap-in of sequence " + std::to_string(seq))
                  : take_blocks(s.swap_table.size());
    for (std::size_t i = 0; i < s.swap_table.size(); ++i)
        pool_.copy_block(swap_pool_, s.swap_table[i], s.table[i]);
    for (std::size_t i = 0; caching() && i < s.hashes.size(); ++i)
        pool_.set_hash(s.table[i], s.hashes[i]);
    release_table(s.swap_table, swap_pool_, seq);
    s.swapped = false;
}

std::span<const BlockId> KvCacheManager::block_table(SeqId seq) const { return sequence(seq).table; }

std::byte* KvCacheManager::tail_data(SeqId seq) {
    Sequence& s = sequence(seq);
    return s.tail.empty() ? nullptr : s.tail.data();
}

std::uint32_t KvCacheManager::num_tokens(SeqId seq) const {
    return static_cast<std::uint32_t>(sequence(seq).tokens.size());
}

SlotRef KvCacheManager::slot_of(SeqId seq, std::uint32_t position) const {
    const Sequence& s = sequence(seq);
    if (s.swapped || position >= s.tokens.size())
        throw KvError("sequence " + std::to_string(seq) + " has no slot for position " + std::to_string(position));
    return {s.table[position / block_size()], position % block_size()};
}

std::vector<BlockInfo> KvCacheManager::block_infos(std::vector<SeqId>* owners) const {
    std::vector<BlockInfo> infos(pool_.num_blocks());
    for (BlockId b = 0; b < infos.size(); ++b) {
        BlockInfo& i = infos[b];
        i.ref_count = pool_.ref_count(b);
        i.fill = static_cast<std::uint16_t>(pool_.fill(b));
        i.last_holder = pool_.last_holder(b);
        if (i.ref_count == 0)
            i.state = pool_.hash(b) ? BlockState::CachedFree : BlockState::Free;
        else if (i.ref_count > 1)
            i.state = BlockState::Shared;
        else
            i.state = i.fill > 0 ? BlockState::Used : BlockState::Reserved;
    }
    if (!owners)
        return infos;
    // Owner lists in CSR form: count, prefix-sum, then place (ascending seq id).
    std::vector<SeqId> ids;
    for (const auto& [id, s] : seqs_)
        ids.push_back(id);
    std::sort(ids.begin(), ids.end());
    for (SeqId id : ids)
        for (BlockId b : seqs_.at(id).table)
            ++infos[b].owner_count;
    std::uint32_t offset = 0;
    for (BlockInfo& i : infos) {
        i.owner_begin = offset;
        offset += i.owner_count;
        i.owner_count = 0;
    }
    owners->assign(offset, 0);
    for (SeqId id : ids)
        for (BlockId b : seqs_.at(id).table)
            (*owners)[infos[b].owner_begin + infos[b].owner_count++] = id;
    return infos;
}

FragmentationStats KvCacheManager::fragmentation() const {
    return compute_fragmentation(block_infos(nullptr), block_size(), config_.mode, pending_request_blocks_);
}

SequenceInfo KvCacheManager::sequence_info(SeqId id, const Sequence& s) const {
    SequenceInfo info;
    info.id = id;
    info.num_tokens = static_cast<std::uint32_t>(s.tokens.size());
    info.capacity_tokens = static_cast<std::uint32_t>(
        (config_.mode == AllocationMode::Contiguous ? s.capacity_blocks : s.table.size()) * block_size());
    info.max_tokens = s.max_tokens;
    info.cached_prefix_tokens = s.cached_prefix_tokens;
    info.swapped = s.swapped;
    info.blocks = s.table;
    if (!s.swapped) {
        const SequenceWaste waste = sequence_waste(config_.layout, s.tokens.size(), s.table.size());
        info.internal_waste_slots = waste.internal_slots;
        info.reserved_waste_slots = waste.reserved_slots;
    }
    return info;
}

std::shared_ptr<const PoolSnapshot> KvCacheManager::snapshot() const {
    std::vector<SeqId> owners;
    std::vector<BlockInfo> infos = block_infos(&owners);
    std::vector<SequenceInfo> sequences;
    for (const auto& [id, s] : seqs_)
        sequences.push_back(sequence_info(id, s));
    std::sort(sequences.begin(), sequences.end(), [](const auto& a, const auto& b) { return a.id < b.id; });
    const FragmentationStats fragmentation =
        compute_fragmentation(infos, block_size(), config_.mode, pending_request_blocks_);
    return std::make_shared<const PoolSnapshot>(PoolSnapshot{
        config_.mode, config_.layout, std::move(infos), std::move(owners), std::move(sequences), fragmentation,
        config_.swap_blocks, static_cast<std::uint32_t>(swap_pool_.num_blocks() - swap_pool_.num_free()),
        prefix_hit_tokens_, prefix_query_tokens_, tail_bytes_in_use()});
}

void KvCacheManager::check_invariants() const {
    auto fail = [](const std::string& what) { throw Error("KV cache invariant broken: " + what); };
    pool_.check_invariants();
    swap_pool_.check_invariants();
    std::vector<std::uint32_t> refs(pool_.num_blocks()), swap_refs(swap_pool_.num_blocks());
    for (const auto& [id, s] : seqs_) {
        const std::string name = "sequence " + std::to_string(id);
        const std::size_t written = config_.layout.blocks_for_tokens(s.tokens.size());
        const std::size_t expected_blocks = s.swapped ? 0
            : config_.mode == AllocationMode::Contiguous ? s.capacity_blocks : written;
        if (s.tail.size() != config_.layout.tail_bytes())
            fail(name + " has a tail of " + str(s.tail.size()) + " bytes, the layout asks " +
                 str(config_.layout.tail_bytes()));
        if (s.table.size() != expected_blocks || s.swap_table.size() != (s.swapped ? written : 0))
            fail(name + " holds " + str(s.table.size()) + " blocks (+" + str(s.swap_table.size()) +
                 " swapped) for " + str(s.tokens.size()) + " tokens");
        for (std::size_t i = 0; i < s.table.size(); ++i) {
            ++refs[s.table[i]];
            const std::size_t start = i * block_size();
            const std::size_t fill = s.tokens.size() > start ? std::min<std::size_t>(block_size(), s.tokens.size() - start) : 0;
            if (pool_.fill(s.table[i]) != fill)
                fail(name + ": block " + str(s.table[i]) + " has fill " + str(pool_.fill(s.table[i])) + ", expected " + str(fill));
            if (config_.mode == AllocationMode::Contiguous && s.table[i] != s.table[0] + i)
                fail(name + ": contiguous table is not one run of consecutive blocks");
        }
        for (BlockId b : s.swap_table)
            ++swap_refs[b];
        if (caching()) {
            std::uint64_t parent = kNoParentHash;
            if (s.hashes.size() != s.tokens.size() / block_size())
                fail(name + " has " + str(s.hashes.size()) + " block hashes for " + str(s.tokens.size()) + " tokens");
            for (std::size_t i = 0; i < s.hashes.size(); ++i) {
                parent = block_hash(parent, std::span<const TokenId>(s.tokens).subspan(i * block_size(), block_size()));
                if (s.hashes[i] != parent)
                    fail(name + ": hash of block " + str(i) + " does not match its tokens");
                if (!s.swapped && pool_.hash(s.table[i]) && *pool_.hash(s.table[i]) != parent)
                    fail(name + ": block " + str(s.table[i]) + " is cached under another prefix's hash");
            }
        }
    }
    std::size_t used = 0;
    for (BlockId b = 0; b < refs.size(); ++b) {
        if (refs[b] != pool_.ref_count(b))
            fail("block " + str(b) + " has ref count " + str(pool_.ref_count(b)) + " but " + str(refs[b]) + " tables hold it");
        used += refs[b] > 0;
    }
    for (BlockId b = 0; b < swap_refs.size(); ++b)
        if (swap_refs[b] != swap_pool_.ref_count(b))
            fail("swap block " + str(b) + " has ref count " + str(swap_pool_.ref_count(b)) + " but " + str(swap_refs[b]) + " tables hold it");
    if (used + pool_.num_free() != pool_.num_blocks())
        fail(str(used) + " used + " + str(pool_.num_free()) + " free blocks != " + str(pool_.num_blocks()) + " total");
}

} // namespace kvscope
