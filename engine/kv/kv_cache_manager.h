#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/core/error.h"
#include "engine/kv/allocation_mode.h"
#include "engine/kv/block_pool.h"
#include "engine/kv/fragmentation.h"
#include "engine/kv/kv_ids.h"
#include "engine/kv/kv_layout.h"
#include "engine/kv/pool_snapshot.h"

namespace kvscope {

// A request the KV cache refused. what() says why, in numbers.
class KvError : public Error {
public:
    using Error::Error;
};

struct KvCacheConfig {
    KvLayout layout;
    std::uint32_t num_blocks = 0;
    AllocationMode mode = AllocationMode::Paged;
    bool prefix_caching = true;   // paged mode only: contiguous allocation never shares
    std::uint32_t swap_blocks = 0; // host swap pool size; 0 = no swapping
    double watermark = 0.0;       // fraction of blocks new sequences must leave free (vLLM: 0.01)
    MemoryPlace memory = MemoryPlace::Host; // the pool's bytes; the swap pool is always host memory
    // The most tokens one sequence computes in a step (the scheduler's
    // max_num_batched_tokens). Sliding-window groups hold the last W - 1
    // computed tokens plus this: admission gives them the first chunk's
    // blocks, and KvLayout::group_blocks caps a sequence by it.
    std::uint32_t chunk_tokens = 512;
};

// Whether a request can be allocated: now, after others finish, or never.
enum class AllocStatus : std::uint8_t { Ok, Later, Never };

// Whether a prompt may take its first blocks from the prefix cache. Never:
// every position runs through the model (a request that wants each prompt
// position's logits, as vLLM skips the lookup for prompt log-probabilities);
// its own full blocks are still offered to later prompts.
enum class PrefixReuse : std::uint8_t { Allowed, Never };

// Why the pool cannot take a request: what was asked, what the pool holds,
// and the reason in words a person can act on.
struct KvRefusal {
    AllocStatus status = AllocStatus::Never; // Later or Never, never Ok
    std::size_t prompt_tokens = 0;           // asked
    std::size_t max_new_tokens = 0;
    std::size_t blocks_needed = 0;           // over the request's life (Never) or now (Later)
    std::size_t free_blocks = 0;             // what the pool holds (Later only: Never reads no pool state)
    std::size_t total_blocks = 0;
    std::size_t watermark_blocks = 0;
    std::string reason;
};

// Where a token's K and V go: slot `slot` of physical block `block`.
struct SlotRef {
    BlockId block = 0;
    std::uint32_t slot = 0;
};

// Maps sequences onto the blocks of one BlockPool: allocation (paged or
// contiguous), fork with copy-on-write, prefix caching by chained block
// hashes, and swapping to a host pool. Single-threaded; snapshot() gives an
// immutable copy for other threads.
//
// KV cache groups (layout().groups(), kv_groups.h): every sequence has one
// block table per group, all over this pool. Full-attention groups hold
// every token. A sliding-window group of W tokens (unless the groups keep
// whole) holds only what attention can still read, as vLLM's
// SlidingWindowManager does:
//   - release_out_of_window(seq, computed), after each step: its blocks
//     whose every position is below computed - W + 1 go back to the pool
//     (full, hashed ones stay prefix-cached until evicted) and their table
//     entries become kNoBlock;
//   - prompts: allocate gives it the blocks of the prompt's first chunk
//     (config().chunk_tokens) only; cover(seq, end) takes those of the
//     next chunk, before it runs (can_cover says whether it can);
//   - contiguous mode reserves group_blocks(max_tokens) for it, a ring the
//     positions wrap around (entry i of its table is entry
//     i mod reservation), instead of the whole context.
// Prefix caching with windows (vLLM's hybrid coordinator): a hit is the
// longest run of leading full blocks L that every full-attention group has
// cached and for which every window group of W tokens has the last
// ceil((W - 1) / block_size) of them cached (or all of them, when L is
// shorter); a window group's entries before those are kNoBlock. L shrinks
// until every group agrees. Each group's blocks are cached under the
// block's chained hash combined with the group (group_block_key).
//
// With a KIVI dtype every live sequence also owns an f16 tail of
// layout().tail_bytes() (its partial last block, see kv_layout.h): created
// zeroed by allocate, copied by fork, kept through swap out and in, dropped
// by free (preemption by recompute frees, then allocates a fresh one).
class KvCacheManager {
public:
    explicit KvCacheManager(const KvCacheConfig& config);

    const KvCacheConfig& config() const { return config_; }
    const KvLayout& layout() const { return config_.layout; }

    // Admission. A prompt of prompt.size() tokens that will grow by at most
    // max_new_tokens. Never: it cannot fit even in an empty pool.
    AllocStatus can_allocate(std::span<const TokenId> prompt, std::uint32_t max_new_tokens,
                             PrefixReuse reuse = PrefixReuse::Allowed) const;
    // Why can_allocate is not Ok, in numbers and words; nothing when it is.
    std::optional<KvRefusal> refusal(std::span<const TokenId> prompt, std::uint32_t max_new_tokens,
                                     PrefixReuse reuse = PrefixReuse::Allowed) const;
    // The refusal of a request that cannot fit even an empty pool; nothing
    // when it can. Reads only the configuration, fixed at construction, so
    // any thread may call it while another allocates.
    std::optional<KvRefusal> never_fits(std::size_t prompt_tokens, std::size_t max_new_tokens) const;
    // Allocates slots for the whole prompt and returns how many of its tokens
    // came from the prefix cache (their K/V need no recompute). Throws KvError
    // with refusal()'s reason when can_allocate is not Ok (and records the
    // request as pending for the external fragmentation figure).
    std::uint32_t allocate(SeqId seq, std::span<const TokenId> prompt, std::uint32_t max_new_tokens,
                           PrefixReuse reuse = PrefixReuse::Allowed);

    // A prompt chunk about to run, computing positions below `end` (at
    // most num_tokens): can_cover says whether its window groups (which
    // lag) can take the blocks for them now; cover takes them (KvError when
    // it cannot) and offers every group's full blocks below `end` to the
    // prefix cache. Blocks join the cache when a step computes them, never
    // earlier (a prompt admitted while another is still being prefilled,
    // or after that one was preempted part way, would read K/V nobody
    // wrote); one admitted later in the same step runs after this chunk,
    // which writes them first in every layer. Decode steps' blocks join at
    // append. Taking blocks is nothing to do, and can_cover true, for a
    // sequence whose groups all hold its tokens.
    bool can_cover(SeqId seq, std::uint32_t end) const;
    void cover(SeqId seq, std::uint32_t end);
    // Tokens every group of the sequence has a slot for.
    std::uint32_t covered_tokens(SeqId seq) const;
    // After a step computed tokens [0, computed): window groups let go of
    // the blocks no later query can see. Returns how many it freed.
    std::size_t release_out_of_window(SeqId seq, std::uint32_t computed);

    // Decode. can_append: one more token fits without preempting anyone.
    bool can_append(SeqId seq) const;
    // Takes the slot for the sequence's next token, copying a shared,
    // partially filled last block first (copy-on-write). Throws KvError when
    // no block is free or a contiguous reservation is used up.
    SlotRef append(SeqId seq, TokenId token);

    // The child shares all of the parent's blocks (paged) or gets a copy of
    // them in its own reservation (contiguous).
    void fork(SeqId parent, SeqId child);
    void free(SeqId seq);

    // Preemption by swapping: copy the blocks to the host swap pool and free
    // them, or bring them back into (new) pool blocks.
    bool can_swap_out(SeqId seq) const;
    void swap_out(SeqId seq);
    AllocStatus can_swap_in(SeqId seq) const;
    void swap_in(SeqId seq);

    bool contains(SeqId seq) const { return seqs_.contains(seq); }
    // Group g's table: logical block i's pool block, kNoBlock where a
    // window group holds none. Attention reads positions p through entry
    // p / block_size.
    std::span<const BlockId> block_table(SeqId seq, std::size_t group) const;
    std::uint32_t num_tokens(SeqId seq) const;
    SlotRef slot_of(SeqId seq, std::size_t group, std::uint32_t position) const;
    std::size_t num_sequences() const { return seqs_.size(); }

    // The sequence's KIVI tail (layout().tail_bytes()); null for other dtypes.
    std::byte* tail_data(SeqId seq);
    // Bytes of all live sequences' tails (outside the pool).
    std::size_t tail_bytes_in_use() const { return seqs_.size() * config_.layout.tail_bytes(); }
    // fp8: the pool's per layer, head and K/V scales (layout().fixed_bytes()
    // / 4 floats, indexed by layout().fixed_scale_index()), all 1.0: with no
    // calibration data in the model file this is vLLM's default
    // (k_scale = v_scale = 1.0), deterministic and independent of what
    // happened to be written first. Empty for other dtypes.
    const float* fixed_scales() const { return fixed_scales_.empty() ? nullptr : fixed_scales_.data(); }

    // A device pointer when config().memory is Cuda.
    std::byte* block_data(BlockId block) { return pool_.data(block); }
    const std::byte* block_data(BlockId block) const { return pool_.data(block); }
    const BlockPool& pool() const { return pool_; }

    FragmentationStats fragmentation() const;
    std::shared_ptr<const PoolSnapshot> snapshot() const;

    // Throws kvscope::Error naming the first broken invariant: ref counts
    // equal the number of tables holding each block, free + used = total, no
    // block on two free lists, hashes point at their blocks, contiguous
    // tables are consecutive runs. For tests and debug builds.
    void check_invariants() const;

private:
    // One group's block table of one sequence.
    struct Table {
        std::vector<BlockId> blocks;  // logical block -> pool block, kNoBlock where none is held
        std::vector<BlockId> swapped; // while swapped out: the swap pool copy of each held entry, in order
        std::uint32_t capacity = 0;   // contiguous: the reserved run is blocks[0, capacity); later entries repeat it
        std::uint32_t registered = 0; // leading logical blocks offered to the prefix cache (cover, append)
    };
    struct Sequence {
        std::vector<TokenId> tokens;
        std::vector<Table> tables;         // one per group
        std::vector<std::uint64_t> hashes; // chained hash of each full block, in order
        std::uint32_t window_covered = 0;  // tokens with a slot in the window groups (<= tokens.size())
        std::uint32_t max_tokens = 0;      // prompt + max_new_tokens, as allocate was asked
        std::uint32_t cached_prefix_tokens = 0;
        bool swapped = false;
        std::vector<std::byte> tail; // KIVI: the partial last block in f16
    };
    // What a prompt gets from the prefix cache: per group, the table's
    // leading entries (kNoBlock before a window group's hits).
    struct PrefixHit {
        std::size_t blocks = 0;             // L: leading logical blocks served
        std::vector<std::uint64_t> hashes;  // their chained hashes
        std::vector<std::vector<BlockId>> tables;
    };

    Sequence& sequence(SeqId seq);
    const Sequence& sequence(SeqId seq) const;
    bool caching() const; // prefix caching is on and the mode can share
    bool contiguous() const { return config_.mode == AllocationMode::Contiguous; }
    std::uint32_t block_size() const;
    std::size_t num_groups() const { return config_.layout.num_groups(); }
    bool frees(std::size_t g) const { return config_.layout.groups().frees(g); }
    std::uint32_t covered(const Sequence& s, std::size_t g) const;
    std::size_t watermark_blocks() const;
    std::uint32_t first_cover(std::size_t prompt_tokens, std::size_t hit_blocks) const;
    std::optional<BlockId> cached_block(std::uint64_t hash, std::size_t g) const;
    bool cached_in_whole_groups(std::uint64_t hash) const;
    std::size_t window_hit_tail(std::uint32_t window) const;
    std::size_t window_hit_blocks(std::span<const std::uint64_t> hashes, std::size_t limit, std::uint32_t window) const;
    PrefixHit prefix_hits(std::span<const TokenId> prompt, PrefixReuse reuse = PrefixReuse::Allowed) const;
    std::size_t blocks_needed(std::span<const TokenId> prompt, std::uint32_t max_new_tokens, const PrefixHit& hit) const;
    std::size_t reservation(std::size_t g, std::size_t max_tokens) const;
    bool runs_fit(std::span<const std::size_t> runs) const;
    bool shared_partial_tail(const Sequence& s, std::size_t g) const;
    std::size_t blocks_to_cover(const Sequence& s, std::uint32_t end) const;
    std::size_t blocks_to_append(const Sequence& s) const;
    void note_taken(BlockId b, std::size_t g);
    BlockId take_block(std::size_t g);
    std::vector<BlockId> take_run(std::size_t g, std::size_t count, const std::string& purpose);
    void extend(Sequence& s, std::size_t g, std::size_t logical_blocks);
    void set_fills(const Sequence& s, std::size_t g, std::size_t from_token, std::size_t to_token);
    void register_computed(Sequence& s, std::size_t g, std::uint32_t computed);
    void seal_full_block(Sequence& s, std::size_t logical_block);
    void release_held(Table& t, SeqId holder);
    static std::vector<BlockId> held(const Table& t);
    void copy_on_write_tail(Sequence& s, std::size_t g, SeqId seq);
    std::vector<BlockInfo> block_infos(std::vector<SeqId>* owners) const;
    SequenceInfo sequence_info(SeqId id, const Sequence& s) const;

    KvCacheConfig config_;
    BlockPool pool_;
    BlockPool swap_pool_;
    std::unordered_map<SeqId, Sequence> seqs_;
    std::vector<std::uint16_t> group_of_block_; // the group whose table took each block last
    std::vector<std::uint8_t> left_window_;     // 1: freed by its window, not taken since
    std::vector<float> fixed_scales_;
    std::size_t pending_request_blocks_ = 0;
    std::uint64_t prefix_hit_tokens_ = 0;
    std::uint64_t prefix_query_tokens_ = 0;
};

} // namespace kvscope
