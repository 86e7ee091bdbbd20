// engine/sched: continuous batching over the paged KV cache. Decides, each
// step, which sequences run and how many of their tokens; admits, preempts
// and resumes. Knows tokens and blocks, not models. Depends on engine/kv.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "engine/kv/kv_cache_manager.h"

namespace kvscope {

enum class PreemptionMode : std::uint8_t {
    Recompute, // free the blocks, requeue, prefill again later
    Swap,      // copy the blocks to the host swap pool, bring them back later
};
std::string_view to_string(PreemptionMode mode); // "recompute", "swap"
PreemptionMode parse_preemption_mode(std::string_view word);

// Who goes first (vLLM's --scheduling-policy).
enum class SchedulingPolicy : std::uint8_t {
    Fcfs,     // arrival order; the most recently admitted is preempted first
    Priority, // (priority, arrival) order, a lower priority value first; see Scheduler
};
std::string_view to_string(SchedulingPolicy policy); // "fcfs", "priority"
SchedulingPolicy parse_scheduling_policy(std::string_view word);

struct SchedulerConfig {
    std::uint32_t max_num_seqs = 64;            // running at once
    std::uint32_t max_num_batched_tokens = 512; // tokens per step: decodes + prefill chunks
    PreemptionMode preemption = PreemptionMode::Swap; // as EngineConfig's
    SchedulingPolicy policy = SchedulingPolicy::Fcfs;
};

enum class SeqStatus : std::uint8_t { Waiting, Running, Swapped };
std::string_view to_string(SeqStatus status);

// A sequence as the scheduler sees it. Its K/V cover tokens[0, computed);
// the KV cache has slots for kv.num_tokens(id) of them. After a sample the
// new token is in `tokens` but has no slot until the next schedule().
struct SchedSeq {
    SeqId id = 0;
    std::vector<TokenId> tokens;  // prompt, then generated tokens
    std::uint32_t max_tokens = 0; // the length it may reach (prompt + max_new_tokens)
    std::uint32_t computed = 0;
    SeqStatus status = SeqStatus::Waiting;
    std::uint64_t arrival = 0; // FCFS order; forks inherit their parent's
    std::int32_t priority = 0; // Priority policy: lower values go first (vLLM's convention); forks inherit it
    // Positions below it need their logits (prompt log-probabilities), at
    // most tokens.size(): admission takes none of its blocks from the
    // prefix cache, and its chunks starting below it return every token's
    // logits (ScheduledChunk::all_logits). 0 once `computed` passes it: a
    // sequence recomputed after that runs as any other.
    std::uint32_t all_logits_until = 0;
};

// One sequence's work in a step: compute tokens[start, start + count).
// `samples`: the chunk reaches the end of `tokens`, so a token is sampled.
struct ScheduledChunk {
    SeqId seq = 0;
    std::uint32_t start = 0;
    std::uint32_t count = 0;
    bool samples = false;
    bool all_logits = false; // every token's logits, not only the last's (SchedSeq::all_logits_until)
};

struct Schedule {
    std::vector<ScheduledChunk> chunks;
    std::vector<SeqId> preempted;
};

// Continuous batching (vLLM's scheduler, with chunked prefill). FCFS:
//   1. running decodes get a slot each; when none is free, the most recently
//      admitted sequence is preempted (recompute or swap) until one is
//   2. running prefills continue with the token budget left
//   3. swapped sequences come back, oldest first, when nothing was preempted
//   4. waiting sequences are admitted, oldest first, while the KV cache can
//      hold them (watermark), max_num_seqs allows and budget is left
// A prefill chunk is cut short to what the KV cache's sliding-window groups
// can cover (they take blocks a chunk at a time); when nothing at all can
// run, the last running sequence is preempted until something can.
// Priority orders every queue by (priority, arrival) instead, "first" and
// "oldest" above meaning "first in that order", and the victim of 1. is
// the running sequence last in it: the lowest priority, latest arrived.
// Before 1., when the head of the waiting queue cannot be admitted (no
// room in the KV cache or max_num_seqs reached), running sequences of
// lower priority than it are preempted, last first, until it can (vLLM
// v0's priority preemption); and a waiting sequence ahead of the swapped
// ones in that order is admitted before they come back.
class Scheduler {
public:
    Scheduler(const SchedulerConfig& config, KvCacheManager& kv);

    // Joins the waiting queue. Throws KvError, adding nothing, for a
    // sequence that can never fit the pool (KvCacheManager::never_fits):
    // Engine::add_request refuses those before they get here; kvscope::Error
    // for all_logits_until past its tokens.
    void add(SchedSeq seq);
    Schedule schedule();
    // After a chunk ran: its tokens' K/V are in the cache, and sliding-
    // window groups let go of what their windows have left behind.
    void mark_computed(SeqId id, std::uint32_t computed);
    void append_token(SeqId id, TokenId token);
    // A parallel sample of `parent`: shares its blocks (or copies them in
    // contiguous mode) and runs from now on. When the cache cannot hold the
    // copy, the child waits and recomputes. Returns the child's status.
    SeqStatus fork(SeqId parent, SeqId child);
    // Finished or aborted: leaves every queue, its blocks are freed.
    void remove(SeqId id);

    const SchedSeq& seq(SeqId id) const;
    bool contains(SeqId id) const { return seqs_.contains(id); }
    bool has_work() const { return !seqs_.empty(); }
    std::size_t num_running() const { return running_.size(); }
    std::size_t num_waiting() const { return waiting_.size(); }
    std::size_t num_swapped() const { return swapped_.size(); }
    const std::deque<SeqId>& waiting_queue() const { return waiting_; } // the next to be admitted first
    std::uint64_t preemptions() const { return preemptions_; }
    const SchedulerConfig& config() const { return config_; }

private:
    bool ahead(const SchedSeq& a, const SchedSeq& b) const; // a goes before b in this policy's order
    bool waiting_head_first() const; // Priority: the waiting head is ahead of the swapped head
    void preempt_for_waiting(Schedule& out);
    void plan(Schedule& out); // steps 1-4

    void enter_running(SeqId id);
    static std::uint32_t new_tokens(const SchedSeq& s); // what it may still generate
    static PrefixReuse prefix_reuse(const SchedSeq& s);
    bool schedule_decode(SchedSeq& s, std::uint32_t& budget, Schedule& out);
    void schedule_prefill(SchedSeq& s, std::uint32_t& budget, Schedule& out);
    void preempt(SchedSeq& victim, Schedule& out);
    void resume_swapped(std::uint32_t& budget, Schedule& out);
    void admit_waiting(std::uint32_t& budget, Schedule& out);
    void enqueue_waiting(SeqId id);
    static void erase(std::vector<SeqId>& queue, SeqId id);
    static void erase(std::deque<SeqId>& queue, SeqId id);

    SchedulerConfig config_;
    KvCacheManager& kv_;
    std::map<SeqId, SchedSeq> seqs_;
    std::vector<SeqId> running_; // FCFS: admission order; Priority: ahead() order. The back is preempted first
    std::deque<SeqId> waiting_;  // ahead() order
    std::deque<SeqId> swapped_;  // ahead() order
    std::uint64_t preemptions_ = 0;
};

} // namespace kvscope
