#include "engine/sched/scheduler.h"

#include <algorithm>
#include <string>

#include "engine/core/error.h"

namespace kvscope {

std::string_view to_string(PreemptionMode mode) { return mode == PreemptionMode::Swap ? "swap" : "recompute"; }

PreemptionMode parse_preemption_mode(std::string_view word) {
    if (word == "recompute")
        return PreemptionMode::Recompute;
    if (word == "swap")
        return PreemptionMode::Swap;
    throw Error("unknown preemption mode '" + std::string(word) + "' (expected recompute or swap)");
}

std::string_view to_string(SchedulingPolicy policy) {
    return policy == SchedulingPolicy::Priority ? "priority" : "fcfs";
}

SchedulingPolicy parse_scheduling_policy(std::string_view word) {
    if (word == "fcfs")
        return SchedulingPolicy::Fcfs;
    if (word == "priority")
        return SchedulingPolicy::Priority;
    throw Error("unknown scheduling policy '" + std::string(word) + "' (expected fcfs or priority)");
}

std::string_view to_string(SeqStatus status) {
    switch (status) {
    case SeqStatus::Waiting: return "waiting";
    case SeqStatus::Running: return "running";
    case SeqStatus::Swapped: return "swapped";
    }
    return "?";
}

Scheduler::Scheduler(const SchedulerConfig& config, KvCacheManager& kv) : config_(config), kv_(kv) {
    if (config.max_num_seqs == 0 || config.max_num_batched_tokens == 0)
        throw Error("scheduler limits must be at least 1 (max_num_seqs " + std::to_string(config.max_num_seqs) +
                    ", max_num_batched_tokens " + std::to_string(config.max_num_batched_tokens) + ")");
}

const SchedSeq& Scheduler::seq(SeqId id) const {
    const auto it = seqs_.find(id);
    if (it == seqs_.end())
        throw Error("scheduler: unknown sequence " + std::to_string(id));
    return it->second;
}

void Scheduler::add(SchedSeq s) {
    if (s.tokens.empty())
        throw Error("scheduler: sequence " + std::to_string(s.id) + " has no tokens");
    if (const auto never = kv_.never_fits(s.tokens.size(), new_tokens(s)))
        throw KvError("scheduler: sequence " + std::to_string(s.id) + ": " + never->reason);
    if (s.all_logits_until > s.tokens.size())
        throw Error("scheduler: sequence " + std::to_string(s.id) + " wants logits up to position " +
                    std::to_string(s.all_logits_until) + " of its " + std::to_string(s.tokens.size()) + " tokens");
    s.status = SeqStatus::Waiting;
    s.computed = 0;
    const SeqId id = s.id;
    if (!seqs_.emplace(id, std::move(s)).second)
        throw Error("scheduler: sequence " + std::to_string(id) + " already exists");
    enqueue_waiting(id);
}

bool Scheduler::ahead(const SchedSeq& a, const SchedSeq& b) const {
    if (config_.policy == SchedulingPolicy::Priority && a.priority != b.priority)
        return a.priority < b.priority;
    return a.arrival < b.arrival;
}

bool Scheduler::waiting_head_first() const {
    return config_.policy == SchedulingPolicy::Priority && !waiting_.empty() && !swapped_.empty() &&
           ahead(seqs_.at(waiting_.front()), seqs_.at(swapped_.front()));
}

// Waiting stays in ahead() order, so a preempted sequence goes back ahead of
// younger ones.
void Scheduler::enqueue_waiting(SeqId id) {
    const SchedSeq& s = seqs_.at(id);
    const auto pos = std::find_if(waiting_.begin(), waiting_.end(), [&](SeqId w) { return ahead(s, seqs_.at(w)); });
    waiting_.insert(pos, id);
}

// Priority keeps running_ in ahead() order, so that its back, the victim of
// preemption, is the lowest-priority, latest-arrived sequence.
void Scheduler::enter_running(SeqId id) {
    if (config_.policy == SchedulingPolicy::Fcfs) {
        running_.push_back(id);
        return;
    }
    const SchedSeq& s = seqs_.at(id);
    const auto pos = std::find_if(running_.begin(), running_.end(), [&](SeqId r) { return ahead(s, seqs_.at(r)); });
    running_.insert(pos, id);
}

// Priority: before anyone decodes, the waiting head takes the place of
// running sequences of lower priority when it could not be admitted
// otherwise. Runs first, so that no victim has a chunk in `out` yet.
void Scheduler::preempt_for_waiting(Schedule& out) {
    if (config_.policy != SchedulingPolicy::Priority)
        return;
    while (!waiting_.empty() && !running_.empty()) {
        const SchedSeq& head = seqs_.at(waiting_.front());
        SchedSeq& last = seqs_.at(running_.back());
        if (last.priority <= head.priority)
            return;
        const AllocStatus status = kv_.can_allocate(head.tokens, new_tokens(head), prefix_reuse(head));
        if (status == AllocStatus::Never || (status == AllocStatus::Ok && running_.size() < config_.max_num_seqs))
            return;
        preempt(last, out);
    }
}

Schedule Scheduler::schedule() {
    Schedule out;
    plan(out);
    // Nothing could run: every running sequence is a prefill whose window
    // groups found no free block for its next chunk. The last in order
    // makes room, as vLLM preempts when a running request's slots cannot
    // be allocated.
    while (out.chunks.empty() && !running_.empty()) {
        preempt(seqs_.at(running_.back()), out);
        plan(out);
    }
    return out;
}

void Scheduler::plan(Schedule& out) {
    std::uint32_t budget = config_.max_num_batched_tokens;
    preempt_for_waiting(out);
    // Decodes first: one token each, the cheapest way to keep everyone moving.
    for (std::size_t i = 0; i < running_.size(); ++i) {
        SchedSeq& s = seqs_.at(running_[i]);
        if (kv_.num_tokens(s.id) < s.tokens.size() && !schedule_decode(s, budget, out))
            break; // s preempted itself: everything behind it is gone too
    }
    const std::size_t decodes = out.chunks.size();
    auto decoding = [&](SeqId id) {
        return std::any_of(out.chunks.begin(), out.chunks.begin() + static_cast<std::ptrdiff_t>(decodes),
                           [id](const ScheduledChunk& c) { return c.seq == id; });
    };
    for (SeqId id : running_) {
        SchedSeq& s = seqs_.at(id);
        if (s.computed < s.tokens.size() && kv_.num_tokens(id) == s.tokens.size() && !decoding(id))
            schedule_prefill(s, budget, out);
    }
    if (out.preempted.empty())
        resume_swapped(budget, out);
    admit_waiting(budget, out);
}

// Returns false when `s` had to be preempted itself.
bool Scheduler::schedule_decode(SchedSeq& s, std::uint32_t& budget, Schedule& out) {
    if (budget == 0)
        return true;
    while (!kv_.can_append(s.id)) {
        SchedSeq& victim = seqs_.at(running_.back());
        preempt(victim, out);
        if (victim.id == s.id)
            return false;
    }
    kv_.append(s.id, s.tokens.back());
    out.chunks.push_back({s.id, static_cast<std::uint32_t>(s.tokens.size() - 1), 1, true, false});
    --budget;
    return true;
}

// A chunk as long as the budget allows and the window groups, which take
// their blocks a chunk at a time, can cover.
void Scheduler::schedule_prefill(SchedSeq& s, std::uint32_t& budget, Schedule& out) {
    const auto left = static_cast<std::uint32_t>(s.tokens.size()) - s.computed;
    std::uint32_t count = std::min(left, budget);
    const std::uint32_t block = kv_.layout().block_size();
    while (count > 0 && !kv_.can_cover(s.id, s.computed + count))
        count = count > block ? count - block : 0;
    if (count == 0)
        return;
    kv_.cover(s.id, s.computed + count);
    out.chunks.push_back({s.id, s.computed, count, count == left, s.computed < s.all_logits_until});
    budget -= count;
}

void Scheduler::preempt(SchedSeq& victim, Schedule& out) {
    erase(running_, victim.id);
    ++preemptions_;
    out.preempted.push_back(victim.id);
    if (config_.preemption == PreemptionMode::Swap && kv_.can_swap_out(victim.id)) {
        kv_.swap_out(victim.id);
        victim.status = SeqStatus::Swapped;
        swapped_.push_back(victim.id);
        std::sort(swapped_.begin(), swapped_.end(),
                  [&](SeqId a, SeqId b) { return ahead(seqs_.at(a), seqs_.at(b)); });
        return;
    }
    // Recompute: its tokens stay; their K/V will be computed again.
    kv_.free(victim.id);
    victim.computed = 0;
    victim.status = SeqStatus::Waiting;
    enqueue_waiting(victim.id);
}

void Scheduler::resume_swapped(std::uint32_t& budget, Schedule& out) {
    while (!swapped_.empty() && running_.size() < config_.max_num_seqs && budget > 0 && !waiting_head_first()) {
        SchedSeq& s = seqs_.at(swapped_.front());
        if (kv_.can_swap_in(s.id) != AllocStatus::Ok)
            return;
        kv_.swap_in(s.id);
        swapped_.pop_front();
        s.status = SeqStatus::Running;
        enter_running(s.id);
        if (kv_.num_tokens(s.id) < s.tokens.size()) {
            if (kv_.can_append(s.id))
                schedule_decode(s, budget, out);
        } else {
            schedule_prefill(s, budget, out);
        }
    }
}

std::uint32_t Scheduler::new_tokens(const SchedSeq& s) {
    const auto length = static_cast<std::uint32_t>(s.tokens.size());
    return s.max_tokens > length ? s.max_tokens - length : 0;
}

// A cached block's K/V would spare the model its positions, and with them
// the logits a sequence that wants every one needs.
PrefixReuse Scheduler::prefix_reuse(const SchedSeq& s) {
    return s.all_logits_until > 0 ? PrefixReuse::Never : PrefixReuse::Allowed;
}

// Swapped sequences come back before anyone waiting (FCFS) or before those
// behind them in ahead() order (Priority).
void Scheduler::admit_waiting(std::uint32_t& budget, Schedule& out) {
    while (!waiting_.empty() && running_.size() < config_.max_num_seqs && budget > 0 &&
           (swapped_.empty() || waiting_head_first())) {
        SchedSeq& s = seqs_.at(waiting_.front());
        const std::uint32_t max_new = new_tokens(s);
        const AllocStatus status = kv_.can_allocate(s.tokens, max_new, prefix_reuse(s));
        if (status != AllocStatus::Ok)
            return; // FCFS: nobody overtakes the oldest waiting sequence (add() let in none that never fit)
        waiting_.pop_front();
        s.computed = kv_.allocate(s.id, s.tokens, max_new, prefix_reuse(s));
        s.status = SeqStatus::Running;
        enter_running(s.id);
        schedule_prefill(s, budget, out);
    }
}

void Scheduler::mark_computed(SeqId id, std::uint32_t computed) {
    SchedSeq& s = seqs_.at(id);
    s.computed = computed;
    kv_.release_out_of_window(id, computed);
    if (computed >= s.all_logits_until)
        s.all_logits_until = 0; // every wanted row has been returned
}

void Scheduler::append_token(SeqId id, TokenId token) { seqs_.at(id).tokens.push_back(token); }

SeqStatus Scheduler::fork(SeqId parent, SeqId child) {
    SchedSeq c = seq(parent);
    c.id = child;
    try {
        kv_.fork(parent, child);
        c.status = SeqStatus::Running;
        seqs_.emplace(child, std::move(c));
        enter_running(child);
        return SeqStatus::Running;
    } catch (const KvError&) {
        // No room for a contiguous copy: prefill it again when there is.
        c.computed = 0;
        c.status = SeqStatus::Waiting;
        seqs_.emplace(child, std::move(c));
        enqueue_waiting(child);
        return SeqStatus::Waiting;
    }
}

void Scheduler::remove(SeqId id) {
    const auto it = seqs_.find(id);
    if (it == seqs_.end())
        return;
    erase(running_, id);
    erase(waiting_, id);
    erase(swapped_, id);
    if (kv_.contains(id))
        kv_.free(id);
    seqs_.erase(it);
}

void Scheduler::erase(std::vector<SeqId>& queue, SeqId id) { std::erase(queue, id); }
void Scheduler::erase(std::deque<SeqId>& queue, SeqId id) { std::erase(queue, id); }

} // namespace kvscope
