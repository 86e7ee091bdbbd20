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
    std::span<const BlockId> block_table(SeqId seq) const;
    std::uint32_t num_tokens(SeqId seq) const;
    SlotRef slot_of(SeqId seq, std::uint32_t position) const;
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
    struct Sequence {
        std::vector<TokenId> tokens;
        std::vector<BlockId> table;       // pool blocks (empty while swapped)
        std::vector<BlockId> swap_table;  // swap pool blocks while swapped
        std::vector<std::uint64_t> hashes; // chained hash of each full block, in order
        std::uint32_t capacity_blocks = 0; // contiguous reservation size
        std::uint32_t max_tokens = 0;      // prompt + max_new_tokens, as allocate was asked
        std::uint32_t cached_prefix_tokens = 0;
        bool swapped = false;
        std::vector<std::byte> tail; // KIVI: the partial last block in f16
    };

    Sequence& sequence(SeqId seq);
    const Sequence& sequence(SeqId seq) const;
    bool caching() const; // prefix caching is on and the mode can share
    std::uint32_t block_size() const;
    std::size_t watermark_blocks() const;
    std::vector<BlockId> prefix_hits(std::span<const TokenId> prompt, PrefixReuse reuse = PrefixReuse::Allowed) const;
    std::size_t blocks_needed(std::span<const TokenId> prompt, std::uint32_t max_new_tokens,
                              std::span<const BlockId> hits) const;
    std::vector<BlockId> take_blocks(std::size_t count);
    std::vector<BlockId> take_run(std::size_t count, const std::string& purpose);
    void seal_full_block(Sequence& s, std::size_t logical_block);
    static void release_table(std::vector<BlockId>& table, BlockPool& pool, SeqId holder);
    void copy_on_write_tail(Sequence& s, SeqId seq);
    std::vector<BlockInfo> block_infos(std::vector<SeqId>* owners) const;
    SequenceInfo sequence_info(SeqId id, const Sequence& s) const;

    KvCacheConfig config_;
    BlockPool pool_;
    BlockPool swap_pool_;
    std::unordered_map<SeqId, Sequence> seqs_;
    std::vector<float> fixed_scales_;
    std::size_t pending_request_blocks_ = 0;
    std::uint64_t prefix_hit_tokens_ = 0;
    std::uint64_t prefix_query_tokens_ = 0;
};

} // namespace kvscope
