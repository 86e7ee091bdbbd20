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
      group_of_block_(config.num_blocks, 0),
      left_window_(config.num_blocks, 0),
      fixed_scales_(config.layout.fixed_bytes() / sizeof(float), 1.0f) {
    if (config.num_blocks == 0)
        throw KvError("a KV pool needs at least one block");
    if (!(config.watermark >= 0.0 && config.watermark < 1.0))
        throw KvError("the watermark is a fraction of the pool in [0, 1), got " + std::to_string(config.watermark));
    if (config.chunk_tokens == 0)
        throw KvError("chunk_tokens (the most tokens a sequence computes in a step) must be at least 1");
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

std::uint32_t KvCacheManager::covered(const Sequence& s, std::size_t g) const {
    return frees(g) ? s.window_covered : static_cast<std::uint32_t>(s.tokens.size());
}

// Window groups start with the prompt's first chunk after the cached prefix.
std::uint32_t KvCacheManager::first_cover(std::size_t prompt_tokens, std::size_t hit_blocks) const {
    if (!config_.layout.groups().frees_any())
        return static_cast<std::uint32_t>(prompt_tokens);
    return static_cast<std::uint32_t>(std::min(prompt_tokens, hit_blocks * block_size() + config_.chunk_tokens));
}

std::optional<BlockId> KvCacheManager::cached_block(std::uint64_t hash, std::size_t g) const {
    return pool_.find_cached(group_block_key(hash, g));
}

// Whether every group that keeps whole context has the block of `hash` cached.
bool KvCacheManager::cached_in_whole_groups(std::uint64_t hash) const {
    for (std::size_t g = 0; g < num_groups(); ++g)
        if (!frees(g) && !cached_block(hash, g))
            return false;
    return true;
}

// Blocks a window group of `window` tokens must hold before a hit: those
// the next query can still see, ceil((window - 1) / block_size).
std::size_t KvCacheManager::window_hit_tail(std::uint32_t window) const {
    return (window - 1 + block_size() - 1) / block_size();
}

// The longest hit up to `limit` blocks for the window groups of `window`
// tokens: the last window_hit_tail blocks before it cached in every such
// group (vLLM's SlidingWindowManager, scanning from the end), else the
// cached run from the first block on.
std::size_t KvCacheManager::window_hit_blocks(std::span<const std::uint64_t> hashes, std::size_t limit,
                                              std::uint32_t window) const {
    const std::size_t needed = window_hit_tail(window);
    if (needed == 0)
        return limit;
    auto cached = [&](std::size_t i) {
        for (std::size_t g = 0; g < num_groups(); ++g)
            if (frees(g) && config_.layout.groups()[g].window == window && !cached_block(hashes[i], g))
                return false;
        return true;
    };
    std::size_t run = 0;
    for (std::size_t i = limit; i-- > 0;) {
        run = cached(i) ? run + 1 : 0;
        if (run == needed)
            return i + needed;
    }
    return run;
}

// Cache hits stop one token short of the prompt: its last token must still
// run through the model to produce the first output's logits.
KvCacheManager::PrefixHit KvCacheManager::prefix_hits(std::span<const TokenId> prompt, PrefixReuse reuse) const {
    PrefixHit hit;
    hit.tables.resize(num_groups());
    if (!caching() || prompt.empty() || reuse == PrefixReuse::Never)
        return hit;
    // Window groups search the whole usable prompt; without them a hit ends
    // at the first block the whole-context groups lack.
    const bool windows = config_.layout.groups().frees_any();
    const std::size_t usable = (prompt.size() - 1) / block_size();
    std::uint64_t parent = kNoParentHash;
    std::size_t blocks = 0; // leading blocks every whole-context group has
    for (std::size_t i = 0; i < usable; ++i) {
        parent = block_hash(parent, prompt.subspan(i * block_size(), block_size()));
        const bool whole_hit = blocks == i && cached_in_whole_groups(parent);
        if (!whole_hit && !windows)
            break;
        blocks += whole_hit;
        hit.hashes.push_back(parent);
    }
    for (bool shrank = true; shrank;) {
        shrank = false;
        for (const KvKind& kind : config_.layout.groups().kinds()) {
            if (kind.window == 0 || !frees(kind.groups.front()))
                continue;
            const std::size_t n = window_hit_blocks(hit.hashes, blocks, kind.window);
            shrank = shrank || n < blocks;
            blocks = std::min(blocks, n);
        }
    }
    hit.blocks = blocks;
    hit.hashes.resize(blocks);
    for (std::size_t g = 0; g < num_groups(); ++g) {
        const std::size_t needed = frees(g) ? window_hit_tail(config_.layout.groups()[g].window) : blocks;
        const std::size_t first = blocks > needed ? blocks - needed : 0;
        hit.tables[g].assign(first, kNoBlock);
        for (std::size_t i = first; i < blocks; ++i)
            hit.tables[g].push_back(*cached_block(hit.hashes[i], g));
    }
    return hit;
}

std::size_t KvCacheManager::reservation(std::size_t g, std::size_t max_tokens) const {
    return contiguous_reservation_blocks(config_.layout, g, max_tokens, config_.chunk_tokens);
}

std::size_t KvCacheManager::blocks_needed(std::span<const TokenId> prompt, std::uint32_t max_new_tokens,
                                          const PrefixHit& hit) const {
    std::size_t needed = 0;
    for (std::size_t g = 0; g < num_groups(); ++g) {
        if (contiguous()) {
            needed += reservation(g, prompt.size() + max_new_tokens);
            continue;
        }
        const std::size_t covered = frees(g) ? first_cover(prompt.size(), hit.blocks) : prompt.size();
        needed += config_.layout.blocks_for_tokens(covered) - hit.blocks;
        // A hit on a cached-free block takes it off the free lists too.
        needed += static_cast<std::size_t>(std::count_if(hit.tables[g].begin(), hit.tables[g].end(), [&](BlockId b) {
            return b != kNoBlock && pool_.ref_count(b) == 0;
        }));
    }
    return needed;
}

// Whether first-fit finds a run for each of `runs`, taken in order, as
// take_run would take them.
bool KvCacheManager::runs_fit(std::span<const std::size_t> runs) const {
    std::vector<std::size_t> free = pool_.free_runs();
    for (std::size_t need : runs) {
        const auto it = std::find_if(free.begin(), free.end(), [&](std::size_t run) { return run >= need; });
        if (it == free.end())
            return false;
        *it -= need;
    }
    return true;
}

AllocStatus KvCacheManager::can_allocate(std::span<const TokenId> prompt, std::uint32_t max_new_tokens,
                                         PrefixReuse reuse) const {
    if (never_fits(prompt.size(), max_new_tokens))
        return AllocStatus::Never;
    const std::size_t needed = blocks_needed(prompt, max_new_tokens, prefix_hits(prompt, reuse));
    if (pool_.num_free() < needed + watermark_blocks())
        return AllocStatus::Later;
    if (contiguous()) {
        std::vector<std::size_t> runs;
        for (std::size_t g = 0; g < num_groups(); ++g)
            runs.push_back(reservation(g, prompt.size() + max_new_tokens));
        if (!runs_fit(runs))
            return AllocStatus::Later;
    }
    return AllocStatus::Ok;
}

std::optional<KvRefusal> KvCacheManager::never_fits(std::size_t prompt_tokens, std::size_t max_new_tokens) const {
    const KvLayout& layout = config_.layout;
    std::size_t lifetime_blocks = 0, prompt_blocks = 0;
    for (std::size_t g = 0; g < num_groups(); ++g) {
        lifetime_blocks += reservation(g, prompt_tokens + max_new_tokens);
        prompt_blocks += layout.group_blocks(g, prompt_tokens, config_.chunk_tokens);
    }
    if (prompt_tokens > 0 && lifetime_blocks <= config_.num_blocks &&
        prompt_blocks + watermark_blocks() <= config_.num_blocks)
        return std::nullopt;
    KvRefusal r{AllocStatus::Never, prompt_tokens, max_new_tokens, lifetime_blocks, 0, config_.num_blocks,
                watermark_blocks(), {}};
    if (prompt_tokens == 0) {
        r.reason = "a sequence needs at least one prompt token";
        return r;
    }
    r.reason = "request of " + str(prompt_tokens) + " prompt + " + str(max_new_tokens) + " new tokens needs " +
               str(lifetime_blocks) + " blocks of " + str(block_size()) + " tokens" +
               (num_groups() > 1 ? " (" + str(num_groups()) + " KV cache groups)" : "") + " but the pool has " +
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
    if (contiguous() && r.free_blocks >= r.blocks_needed + r.watermark_blocks) {
        std::vector<BlockInfo> infos = block_infos(nullptr);
        const FragmentationStats f = compute_fragmentation(infos, block_size(), config_.mode, r.blocks_needed);
        r.reason = "contiguous allocation of " + str(r.blocks_needed) + " blocks" +
                   (num_groups() > 1 ? " (one run per KV cache group, " + str(num_groups()) + " groups)" : "") +
                   " for " + request + " failed: " + str(f.free_blocks) +
                   " blocks are free but the largest free run is " + str(f.largest_free_run) +
                   " (external fragmentation: " + str(f.external_blocks) + " of " + str(f.total_blocks) +
                   " blocks, " + percent(f.external_fragmentation()) + ")";
        return r;
    }
    r.reason = "request of " + request + " needs " + str(r.blocks_needed) + " free blocks" +
               (r.watermark_blocks ? " plus a watermark of " + str(r.watermark_blocks) : "") + " but only " +
               str(r.free_blocks) + " of " + str(r.total_blocks) + " are free";
    return r;
}

// A block group g's table just took: the block map's group, and no longer
// one the window left behind.
void KvCacheManager::note_taken(BlockId b, std::size_t g) {
    group_of_block_[b] = static_cast<std::uint16_t>(g);
    left_window_[b] = 0;
}

BlockId KvCacheManager::take_block(std::size_t g) {
    const BlockId b = pool_.allocate();
    note_taken(b, g);
    return b;
}

std::vector<BlockId> KvCacheManager::take_run(std::size_t g, std::size_t count, const std::string& purpose) {
    const auto first = pool_.allocate_run(count);
    if (!first)
        throw KvError(purpose + " needs a run of " + str(count) + " consecutive free blocks; the largest free run is " +
                      str(pool_.largest_free_run()));
    std::vector<BlockId> run(count);
    for (std::size_t i = 0; i < count; ++i) {
        run[i] = static_cast<BlockId>(*first + i);
        note_taken(run[i], g);
    }
    return run;
}

// Grows group g's table to `logical_blocks` entries: fresh blocks when
// paged, the reserved run again when contiguous (a window group's ring).
void KvCacheManager::extend(Sequence& s, std::size_t g, std::size_t logical_blocks) {
    Table& t = s.tables[g];
    while (t.blocks.size() < logical_blocks)
        t.blocks.push_back(contiguous() ? t.blocks[t.blocks.size() % t.capacity] : take_block(g));
}

// Offers group g's full blocks whose K/V this step computes or computed
// (positions below `computed`) to later prompts, under the hashes the
// tokens sealed. Never earlier: a block registered before its K/V exist
// could be hit by a prompt admitted while this one is still being
// prefilled, or after it was preempted part way, and read as if computed.
// A prompt admitted later in the same step runs after this sequence's
// chunk, which writes the block first in every layer.
void KvCacheManager::register_computed(Sequence& s, std::size_t g, std::uint32_t computed) {
    Table& t = s.tables[g];
    const std::size_t end = std::min({std::size_t{computed} / block_size(), s.hashes.size(), t.blocks.size()});
    for (; caching() && t.registered < end; ++t.registered)
        if (t.blocks[t.registered] != kNoBlock) // false: an equal block is cached already
            pool_.set_hash(t.blocks[t.registered], group_block_key(s.hashes[t.registered], g));
}

// Fills of group g's logical blocks holding positions [from, to).
void KvCacheManager::set_fills(const Sequence& s, std::size_t g, std::size_t from, std::size_t to) {
    const std::vector<BlockId>& blocks = s.tables[g].blocks;
    for (std::size_t i = from / block_size(); i * block_size() < to; ++i)
        if (blocks[i] != kNoBlock)
            pool_.set_fill(blocks[i], static_cast<std::uint32_t>(std::min<std::size_t>(block_size(), to - i * block_size())));
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
    s.tables.resize(num_groups());
    if (contiguous()) {
        for (std::size_t g = 0; g < num_groups(); ++g) {
            s.tables[g].capacity = static_cast<std::uint32_t>(reservation(g, s.max_tokens));
            s.tables[g].blocks = take_run(g, s.tables[g].capacity, "contiguous allocation");
        }
    } else {
        PrefixHit hit = prefix_hits(prompt, reuse);
        for (std::size_t g = 0; g < num_groups(); ++g) {
            s.tables[g].blocks = std::move(hit.tables[g]);
            for (BlockId b : s.tables[g].blocks)
                if (b != kNoBlock)
                    pool_.retain(b);
        }
        s.hashes = std::move(hit.hashes);
        s.cached_prefix_tokens = static_cast<std::uint32_t>(hit.blocks * block_size());
        for (Table& t : s.tables)
            t.registered = static_cast<std::uint32_t>(hit.blocks); // they are cached already
    }
    s.window_covered = first_cover(prompt.size(), s.hashes.size());
    for (std::size_t i = s.hashes.size(); caching() && i < prompt.size() / block_size(); ++i)
        seal_full_block(s, i);
    for (std::size_t g = 0; g < num_groups(); ++g) {
        extend(s, g, config_.layout.blocks_for_tokens(covered(s, g)));
        set_fills(s, g, 0, covered(s, g));
    }
    if (caching() && reuse == PrefixReuse::Allowed) { // a prompt that skipped the lookup asked nothing of it
        prefix_hit_tokens_ += s.cached_prefix_tokens;
        prefix_query_tokens_ += prompt.size();
    }
    pending_request_blocks_ = 0;
    const std::uint32_t cached = s.cached_prefix_tokens;
    seqs_.emplace(seq, std::move(s));
    return cached;
}

// A block's tokens are all known: record its chained hash, which
// register_computed offers to the prefix cache once a step computes it.
void KvCacheManager::seal_full_block(Sequence& s, std::size_t logical_block) {
    const std::uint64_t parent = logical_block > 0 ? s.hashes[logical_block - 1] : kNoParentHash;
    const auto tokens = std::span<const TokenId>(s.tokens).subspan(logical_block * block_size(), block_size());
    s.hashes.push_back(block_hash(parent, tokens));
}

// A window group's partial last block shared with a fork is copied before
// the chunk writes into it, as append does.
bool KvCacheManager::shared_partial_tail(const Sequence& s, std::size_t g) const {
    const std::vector<BlockId>& blocks = s.tables[g].blocks;
    return s.window_covered % block_size() != 0 && pool_.ref_count(blocks.back()) > 1;
}

std::size_t KvCacheManager::blocks_to_cover(const Sequence& s, std::uint32_t end) const {
    if (contiguous() || end <= s.window_covered)
        return 0;
    std::size_t needed = 0;
    for (std::size_t g = 0; g < num_groups(); ++g)
        if (frees(g))
            needed += config_.layout.blocks_for_tokens(end) - s.tables[g].blocks.size() + shared_partial_tail(s, g);
    return needed;
}

bool KvCacheManager::can_cover(SeqId seq, std::uint32_t end) const {
    const Sequence& s = sequence(seq);
    return !s.swapped && end <= s.tokens.size() && pool_.num_free() >= blocks_to_cover(s, end);
}

void KvCacheManager::cover(SeqId seq, std::uint32_t end) {
    Sequence& s = sequence(seq);
    if (!can_cover(seq, end))
        throw KvError("sequence " + std::to_string(seq) + " cannot cover positions up to " + str(end) +
                      (s.swapped ? ": it is swapped out"
                                 : end > s.tokens.size() ? ": it has " + str(s.tokens.size()) + " tokens"
                                                         : ": " + str(blocks_to_cover(s, end)) + " blocks needed, " +
                                                               str(pool_.num_free()) + " free"));
    if (end > s.window_covered) {
        for (std::size_t g = 0; g < num_groups(); ++g)
            if (frees(g)) {
                if (shared_partial_tail(s, g))
                    copy_on_write_tail(s, g, seq);
                extend(s, g, config_.layout.blocks_for_tokens(end));
                set_fills(s, g, s.window_covered, end);
            }
        s.window_covered = end;
    }
    for (std::size_t g = 0; g < num_groups(); ++g)
        register_computed(s, g, end);
}

std::uint32_t KvCacheManager::covered_tokens(SeqId seq) const { return sequence(seq).window_covered; }

std::size_t KvCacheManager::release_out_of_window(SeqId seq, std::uint32_t computed) {
    Sequence& s = sequence(seq);
    std::size_t released = 0;
    if (s.swapped || contiguous())
        return released;
    // Nothing past what the window groups cover has been computed in them.
    computed = std::min(computed, s.window_covered);
    for (std::size_t g = 0; g < num_groups(); ++g) {
        const std::uint32_t window = config_.layout.groups()[g].window;
        if (!frees(g) || computed < window)
            continue;
        // Positions below computed - window + 1 are masked for every later query.
        std::vector<BlockId>& blocks = s.tables[g].blocks;
        const std::size_t behind = std::min<std::size_t>((computed - window + 1) / block_size(), blocks.size());
        for (std::size_t i = behind; i-- > 0 && blocks[i] != kNoBlock;) {
            pool_.release(blocks[i], seq);
            left_window_[blocks[i]] = 1;
            blocks[i] = kNoBlock;
            ++released;
        }
    }
    return released;
}

std::size_t KvCacheManager::blocks_to_append(const Sequence& s) const {
    const std::size_t pos = s.tokens.size();
    std::size_t needed = 0;
    for (std::size_t g = 0; g < num_groups(); ++g)
        needed += pos % block_size() == 0 || pool_.ref_count(s.tables[g].blocks[pos / block_size()]) > 1;
    return needed;
}

bool KvCacheManager::can_append(SeqId seq) const {
    const Sequence& s = sequence(seq);
    if (s.swapped || s.window_covered < s.tokens.size())
        return false;
    const std::size_t pos = s.tokens.size();
    if (contiguous()) {
        for (std::size_t g = 0; g < num_groups(); ++g)
            if (!frees(g) && pos >= std::size_t{s.tables[g].capacity} * block_size())
                return false;
        return true;
    }
    return blocks_to_append(s) <= pool_.num_free();
}

SlotRef KvCacheManager::append(SeqId seq, TokenId token) {
    Sequence& s = sequence(seq);
    if (s.swapped)
        throw KvError("sequence " + std::to_string(seq) + " is swapped out; swap it in before appending");
    if (s.window_covered < s.tokens.size())
        throw KvError("sequence " + std::to_string(seq) + " is still in its prompt: cover it first");
    const std::size_t pos = s.tokens.size();
    const std::uint32_t slot = static_cast<std::uint32_t>(pos % block_size());
    if (contiguous() && !can_append(seq))
        throw KvError("sequence " + std::to_string(seq) + " used up its contiguous reservation of " +
                      str(std::size_t{s.tables[0].capacity} * block_size()) + " tokens");
    if (!contiguous() && blocks_to_append(s) > pool_.num_free())
        throw KvError("no free KV block for sequence " + std::to_string(seq) + ": " + str(blocks_to_append(s)) +
                      " needed, " + str(pool_.num_free()) + " of " + str(config_.num_blocks) + " blocks free");
    for (std::size_t g = 0; g < num_groups(); ++g) {
        if (slot == 0 || contiguous())
            extend(s, g, pos / block_size() + 1);
        else if (pool_.ref_count(s.tables[g].blocks[pos / block_size()]) > 1)
            copy_on_write_tail(s, g, seq);
        pool_.set_fill(s.tables[g].blocks[pos / block_size()], slot + 1);
    }
    s.tokens.push_back(token);
    s.window_covered = static_cast<std::uint32_t>(s.tokens.size());
    if (caching() && slot + 1 == block_size()) { // the step computes this token
        seal_full_block(s, pos / block_size());
        for (std::size_t g = 0; g < num_groups(); ++g)
            register_computed(s, g, s.window_covered);
    }
    return {s.tables[0].blocks[pos / block_size()], slot};
}

// The last block is shared and not full: writing into it would change what
// the other holders see, so this sequence gets its own copy first.
void KvCacheManager::copy_on_write_tail(Sequence& s, std::size_t g, SeqId seq) {
    BlockId& last = s.tables[g].blocks.back();
    const BlockId own = take_block(g);
    pool_.copy_block(pool_, last, own);
    pool_.release(last, seq);
    last = own;
}

void KvCacheManager::fork(SeqId parent, SeqId child) {
    if (seqs_.contains(child))
        throw KvError("cannot fork into sequence " + std::to_string(child) + ": it already exists");
    const Sequence& p = sequence(parent);
    if (p.swapped)
        throw KvError("cannot fork sequence " + std::to_string(parent) + " while it is swapped out");
    Sequence c = p;
    c.cached_prefix_tokens = 0;
    if (contiguous()) {
        // The pre-paging systems had no block sharing: a fork is a full copy.
        std::vector<std::size_t> runs;
        for (const Table& t : p.tables)
            runs.push_back(t.capacity);
        if (!runs_fit(runs))
            throw KvError("contiguous fork of sequence " + std::to_string(parent) + " needs runs of free blocks (" +
                          str(runs.front()) + " consecutive) the pool does not have; the largest free run is " +
                          str(pool_.largest_free_run()));
        for (std::size_t g = 0; g < num_groups(); ++g) {
            Table& t = c.tables[g];
            t.blocks = take_run(g, t.capacity, "contiguous fork of sequence " + std::to_string(parent));
            const std::size_t written = std::min<std::size_t>(t.capacity, config_.layout.blocks_for_tokens(covered(p, g)));
            for (std::size_t i = 0; i < written; ++i)
                pool_.copy_block(pool_, p.tables[g].blocks[i], t.blocks[i]);
            extend(c, g, p.tables[g].blocks.size());
        }
    } else {
        for (const Table& t : c.tables)
            for (BlockId b : t.blocks)
                if (b != kNoBlock)
                    pool_.retain(b);
    }
    seqs_.emplace(child, std::move(c));
}

// The pool blocks a table holds: its entries when paged (kNoBlock
// skipped), its reserved run when contiguous.
std::vector<BlockId> KvCacheManager::held(const Table& t) {
    if (t.capacity > 0)
        return {t.blocks.begin(), t.blocks.begin() + std::min<std::size_t>(t.capacity, t.blocks.size())};
    std::vector<BlockId> blocks;
    for (BlockId b : t.blocks)
        if (b != kNoBlock)
            blocks.push_back(b);
    return blocks;
}

void KvCacheManager::release_held(Table& t, SeqId holder) {
    // Last block first, so a sequence's tail is reused (or evicted) first.
    const std::vector<BlockId> blocks = held(t);
    for (auto it = blocks.rbegin(); it != blocks.rend(); ++it)
        pool_.release(*it, holder);
    t.blocks.clear();
}

void KvCacheManager::free(SeqId seq) {
    Sequence& s = sequence(seq);
    for (Table& t : s.tables) {
        release_held(t, seq);
        for (BlockId b : t.swapped)
            if (b != kNoBlock)
                swap_pool_.release(b, seq);
    }
    seqs_.erase(seq);
}

// Swapping copies what a table holds and has written: every held entry
// when paged (kNoBlock kept in place), the run's written blocks when
// contiguous (the rest of the reservation is taken again at swap-in).
namespace {
std::size_t swap_entries(const std::vector<BlockId>& blocks, std::uint32_t capacity, std::size_t written) {
    if (capacity > 0)
        return std::min<std::size_t>(capacity, written);
    return static_cast<std::size_t>(std::count_if(blocks.begin(), blocks.end(), [](BlockId b) { return b != kNoBlock; }));
}
} // namespace

bool KvCacheManager::can_swap_out(SeqId seq) const {
    const Sequence& s = sequence(seq);
    if (s.swapped)
        return false;
    std::size_t needed = 0;
    for (std::size_t g = 0; g < num_groups(); ++g)
        needed += swap_entries(s.tables[g].blocks, s.tables[g].capacity, config_.layout.blocks_for_tokens(covered(s, g)));
    return swap_pool_.num_free() >= needed;
}

void KvCacheManager::swap_out(SeqId seq) {
    Sequence& s = sequence(seq);
    if (!can_swap_out(seq))
        throw KvError(s.swapped ? "sequence " + std::to_string(seq) + " is already swapped out"
                                : "swap pool has " + str(swap_pool_.num_free()) + " free blocks; sequence " +
                                      std::to_string(seq) + " needs more");
    for (std::size_t g = 0; g < num_groups(); ++g) {
        Table& t = s.tables[g];
        const std::size_t written = config_.layout.blocks_for_tokens(covered(s, g));
        const std::size_t entries = t.capacity > 0 ? std::min<std::size_t>(t.capacity, written) : t.blocks.size();
        for (std::size_t i = 0; i < entries; ++i) {
            if (t.blocks[i] == kNoBlock) {
                t.swapped.push_back(kNoBlock);
                continue;
            }
            const BlockId host = swap_pool_.allocate();
            swap_pool_.copy_block(pool_, t.blocks[i], host);
            t.swapped.push_back(host);
        }
        release_held(t, seq);
    }
    s.swapped = true;
}

AllocStatus KvCacheManager::can_swap_in(SeqId seq) const {
    const Sequence& s = sequence(seq);
    if (!s.swapped)
        return AllocStatus::Never;
    std::size_t needed = 0;
    std::vector<std::size_t> runs;
    for (const Table& t : s.tables) {
        needed += t.capacity > 0 ? t.capacity : swap_entries(t.swapped, 0, 0);
        runs.push_back(t.capacity);
    }
    if (pool_.num_free() < needed)
        return AllocStatus::Later;
    if (contiguous() && !runs_fit(runs))
        return AllocStatus::Later;
    return AllocStatus::Ok;
}

void KvCacheManager::swap_in(SeqId seq) {
    Sequence& s = sequence(seq);
    if (can_swap_in(seq) != AllocStatus::Ok)
        throw KvError(s.swapped ? "not enough free blocks to swap sequence " + std::to_string(seq) + " back in (" +
                                      str(pool_.num_free()) + " free)"
                                : "sequence " + std::to_string(seq) + " is not swapped out");
    for (std::size_t g = 0; g < num_groups(); ++g) {
        Table& t = s.tables[g];
        if (contiguous()) {
            t.blocks = take_run(g, t.capacity, "swap-in of sequence " + std::to_string(seq));
            for (std::size_t i = 0; i < t.swapped.size(); ++i)
                pool_.copy_block(swap_pool_, t.swapped[i], t.blocks[i]);
            extend(s, g, config_.layout.blocks_for_tokens(covered(s, g)));
        } else {
            for (std::size_t i = 0; i < t.swapped.size(); ++i) {
                if (t.swapped[i] == kNoBlock) {
                    t.blocks.push_back(kNoBlock);
                    continue;
                }
                const BlockId b = take_block(g);
                pool_.copy_block(swap_pool_, t.swapped[i], b);
                if (caching() && i < t.registered)
                    pool_.set_hash(b, group_block_key(s.hashes[i], g));
                t.blocks.push_back(b);
            }
        }
        for (auto it = t.swapped.rbegin(); it != t.swapped.rend(); ++it)
            if (*it != kNoBlock)
                swap_pool_.release(*it, seq);
        t.swapped.clear();
    }
    s.swapped = false;
}

std::span<const BlockId> KvCacheManager::block_table(SeqId seq, std::size_t group) const {
    return sequence(seq).tables.at(group).blocks;
}

std::byte* KvCacheManager::tail_data(SeqId seq) {
    Sequence& s = sequence(seq);
    return s.tail.empty() ? nullptr : s.tail.data();
}

std::uint32_t KvCacheManager::num_tokens(SeqId seq) const {
    return static_cast<std::uint32_t>(sequence(seq).tokens.size());
}

SlotRef KvCacheManager::slot_of(SeqId seq, std::size_t group, std::uint32_t position) const {
    const Sequence& s = sequence(seq);
    if (s.swapped || group >= num_groups() || position >= covered(s, group) ||
        s.tables[group].blocks[position / block_size()] == kNoBlock)
        throw KvError("sequence " + std::to_string(seq) + " has no slot in KV cache group " + str(group) +
                      " for position " + std::to_string(position));
    return {s.tables[group].blocks[position / block_size()], position % block_size()};
}

std::vector<BlockInfo> KvCacheManager::block_infos(std::vector<SeqId>* owners) const {
    std::vector<BlockInfo> infos(pool_.num_blocks());
    for (BlockId b = 0; b < infos.size(); ++b) {
        BlockInfo& i = infos[b];
        i.ref_count = pool_.ref_count(b);
        i.fill = static_cast<std::uint16_t>(pool_.fill(b));
        i.last_holder = pool_.last_holder(b);
        i.group = group_of_block_[b];
        i.left_window = i.ref_count == 0 && left_window_[b];
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
        for (const Table& t : seqs_.at(id).tables)
            for (BlockId b : held(t))
                ++infos[b].owner_count;
    std::uint32_t offset = 0;
    for (BlockInfo& i : infos) {
        i.owner_begin = offset;
        offset += i.owner_count;
        i.owner_count = 0;
    }
    owners->assign(offset, 0);
    for (SeqId id : ids)
        for (const Table& t : seqs_.at(id).tables)
            for (BlockId b : held(t))
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
    const Table& first = s.tables.front();
    info.capacity_tokens = static_cast<std::uint32_t>((contiguous() ? first.capacity : first.blocks.size()) * block_size());
    info.max_tokens = s.max_tokens;
    info.cached_prefix_tokens = s.cached_prefix_tokens;
    info.swapped = s.swapped;
    for (std::size_t g = 0; g < num_groups(); ++g) {
        const Table& t = s.tables[g];
        const std::vector<BlockId> blocks = held(t);
        info.blocks.insert(info.blocks.end(), blocks.begin(), blocks.end());
        info.group_blocks.push_back(static_cast<std::uint32_t>(blocks.size()));
        if (s.swapped)
            continue;
        // The tokens its held blocks hold: a window group's start after the
        // entries it let go of; a ring's last reservation's worth.
        const std::size_t dropped = static_cast<std::size_t>(std::count(t.blocks.begin(), t.blocks.end(), kNoBlock));
        info.left_window_blocks += static_cast<std::uint32_t>(dropped);
        std::size_t tokens = covered(s, g) - dropped * block_size();
        if (t.capacity > 0 && tokens > std::size_t{t.capacity} * block_size())
            tokens = std::size_t{t.capacity} * block_size() - (block_size() - tokens % block_size()) % block_size();
        const SequenceWaste waste = sequence_waste(config_.layout, tokens, blocks.size());
        info.internal_waste_slots += waste.internal_slots;
        info.reserved_waste_slots += waste.reserved_slots;
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
        config_.mode, config_.layout, config_.chunk_tokens, std::move(infos), std::move(owners), std::move(sequences),
        fragmentation, config_.swap_blocks,
        static_cast<std::uint32_t>(swap_pool_.num_blocks() - swap_pool_.num_free()), prefix_hit_tokens_,
        prefix_query_tokens_, tail_bytes_in_use()});
}

void KvCacheManager::check_invariants() const {
    auto fail = [](const std::string& what) { throw Error("KV cache invariant broken: " + what); };
    pool_.check_invariants();
    swap_pool_.check_invariants();
    std::vector<std::uint32_t> refs(pool_.num_blocks()), swap_refs(swap_pool_.num_blocks());
    for (const auto& [id, s] : seqs_) {
        const std::string name = "sequence " + std::to_string(id);
        if (s.tail.size() != config_.layout.tail_bytes())
            fail(name + " has a tail of " + str(s.tail.size()) + " bytes, the layout asks " +
                 str(config_.layout.tail_bytes()));
        if (s.tables.size() != num_groups())
            fail(name + " has " + str(s.tables.size()) + " block tables for " + str(num_groups()) + " groups");
        if (s.window_covered > s.tokens.size() || (!config_.layout.groups().frees_any() && s.window_covered != s.tokens.size()))
            fail(name + " covers " + str(s.window_covered) + " of its " + str(s.tokens.size()) + " tokens");
        for (std::size_t g = 0; g < num_groups(); ++g) {
            const Table& t = s.tables[g];
            const std::string table = name + " group " + str(g);
            const std::size_t logical = config_.layout.blocks_for_tokens(covered(s, g));
            const std::size_t expected = s.swapped ? 0 : t.capacity > 0 ? std::max<std::size_t>(t.capacity, logical) : logical;
            if (t.blocks.size() != expected || (!s.swapped && !t.swapped.empty()))
                fail(table + " holds " + str(t.blocks.size()) + " entries (+" + str(t.swapped.size()) +
                     " swapped) for " + str(covered(s, g)) + " tokens");
            for (BlockId b : held(t))
                ++refs[b];
            for (BlockId b : t.swapped)
                if (b != kNoBlock)
                    ++swap_refs[b];
            for (std::size_t i = 0; i < t.blocks.size(); ++i) {
                const BlockId b = t.blocks[i];
                if (b == kNoBlock) {
                    if (!frees(g) || (i > 0 && t.blocks[i - 1] != kNoBlock))
                        fail(table + ": entry " + str(i) + " holds no block outside a window group's leading run");
                    continue;
                }
                if (t.capacity > 0 && b != t.blocks[0] + i % t.capacity)
                    fail(table + ": contiguous table is not one run of consecutive blocks");
                // A ring block holds the last logical block that maps onto it.
                if (t.capacity > 0 && i + t.capacity < t.blocks.size())
                    continue;
                const std::size_t start = i * block_size();
                const std::size_t fill = covered(s, g) > start ? std::min<std::size_t>(block_size(), covered(s, g) - start) : 0;
                if (pool_.fill(b) != fill)
                    fail(table + ": block " + str(b) + " has fill " + str(pool_.fill(b)) + ", expected " + str(fill));
                if (caching() && i < s.hashes.size() && pool_.hash(b) && *pool_.hash(b) != group_block_key(s.hashes[i], g))
                    fail(table + ": block " + str(b) + " is cached under another prefix's hash");
            }
        }
        if (caching()) {
            std::uint64_t parent = kNoParentHash;
            if (s.hashes.size() != s.tokens.size() / block_size())
                fail(name + " has " + str(s.hashes.size()) + " block hashes for " + str(s.tokens.size()) + " tokens");
            for (std::size_t i = 0; i < s.hashes.size(); ++i) {
                parent = block_hash(parent, std::span<const TokenId>(s.tokens).subspan(i * block_size(), block_size()));
                if (s.hashes[i] != parent)
                    fail(name + ": hash of block " + str(i) + " does not match its tokens");
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
