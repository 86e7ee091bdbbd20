#include "engine/engine.h"

#include <algorithm>

#include "engine/core/error.h"
#include "engine/core/log.h"
#include "kernels/cpu/parallel.h"

namespace kvscope {
namespace {

KvCacheConfig kv_config(const EngineConfig& c, const Model& model, Backend backend) {
    const KvLayout layout = engine_kv_layout(c, model.config());
    const std::uint32_t blocks = kv_pool_blocks(c, layout, model.config().context_length);
    // Four KV pools' worth (vLLM gives 4 GiB whatever the KV cache): a pool
    // only as large as the KV cache fills up under a preemption storm, and
    // whoever it cannot take is recomputed. Its pages cost RAM only once used.
    const std::uint32_t swap =
        c.swap_blocks ? c.swap_blocks : c.preemption == PreemptionMode::Swap ? kSwapPoolsPerKvPool * blocks : 0;
    return {layout, blocks, c.allocation, c.prefix_caching, swap, c.watermark, kv_memory(backend), c.max_num_batched_tokens};
}

SchedulerConfig scheduler_config(const EngineConfig& c) {
    return {c.max_num_seqs, c.max_num_batched_tokens, c.preemption, c.scheduling_policy};
}

std::shared_ptr<const Model> checked(std::shared_ptr<const Model> model) {
    if (!model)
        throw Error("the engine needs a model");
    return model;
}

} // namespace

std::string_view to_string(FinishReason reason) {
    switch (reason) {
    case FinishReason::Stop: return "stop";
    case FinishReason::Length: return "length";
    case FinishReason::Abort: return "abort";
    case FinishReason::Error: return "error";
    }
    return "?";
}

Engine::Engine(const EngineConfig& config, std::shared_ptr<const Model> model, const ForwardPassFactory& make_pass)
    : config_(config),
      model_(checked(std::move(model))),
      tokenizer_(std::make_unique<Tokenizer>(read_vocabulary(model_->file()))),
      backend_(choose_backend(config.backend, model_->config(), engine_kv_layout(config, model_->config()))),
      threads_(kernels::cpu::resolve_threads(config.threads)),
      kv_(kv_config(config, *model_, backend_)),
      scheduler_(scheduler_config(config), kv_),
      runner_(make_pass(backend_, *model_, kv_.layout(), threads_)) {
    logger("engine")->info("engine: {} backend, {} KV, {} blocks of {} tokens ({:.1f} MiB), {} allocation, {} preemption",
                           to_string(backend_), to_string(config.kv_dtype), kv_.config().num_blocks, config.block_size,
                           static_cast<double>(kv_.config().num_blocks * kv_.layout().bytes_per_block()) / (1 << 20),
                           to_string(config.allocation), to_string(config.preemption));
}

double Engine::now() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

Admission Engine::add_request(std::string_view prompt, const RequestParams& params) {
    return add_request(tokenizer_->encode(prompt), params);
}

Admission Engine::add_request(std::vector<TokenId> prompt, const RequestParams& params) {
    if (std::optional<RequestRefusal> refused = refusal(prompt, params)) {
        logger("engine")->warn("request refused: {}", refused->message);
        ++refused_;
        return Admission(std::move(*refused));
    }
    const RequestId id = next_request_++;
    Request& r = requests_[id];
    r.params = params;
    r.prompt_tokens = static_cast<std::uint32_t>(prompt.size());
    r.arrival = now();
    r.open = params.n;
    const SeqId s = new_seq(id, 0);
    // Prompt log-probabilities: the logits of positions 0 .. prompt - 2
    // predict prompt tokens 1 .. prompt - 1.
    const std::uint32_t all_logits_until = params.prompt_logprobs ? r.prompt_tokens - 1 : 0;
    scheduler_.add({s, std::move(prompt), r.prompt_tokens + params.max_new_tokens, 0, SeqStatus::Waiting, arrivals_++,
                    params.priority, all_logits_until});
    return Admission(id);
}

std::optional<RequestRefusal> Engine::refusal(std::span<const TokenId> prompt, const RequestParams& params) const {
    RequestRefusal r{RefusalReason::EmptyPrompt, static_cast<std::uint32_t>(prompt.size()), params.max_new_tokens,
                     params.n, std::nullopt, {}};
    const std::size_t context = model_->config().context_length;
    const auto outside_vocab = std::find_if(prompt.begin(), prompt.end(), [&](TokenId t) {
        return t < 0 || t >= static_cast<TokenId>(model_->config().vocab_size);
    });
    if (prompt.empty()) {
        r.message = "the prompt is empty";
    } else if (params.n > kMaxSamplesPerRequest) {
        r.reason = RefusalReason::BadCount;
        r.message = "n = " + std::to_string(params.n) + " samples; a request may ask for at most " +
                    std::to_string(kMaxSamplesPerRequest);
    } else if (params.n == 0 || params.max_new_tokens == 0) {
        r.reason = RefusalReason::BadCount;
        r.message = "n and max_new_tokens must be at least 1";
    } else if (context > 0 && prompt.size() + params.max_new_tokens > context) {
        r.reason = RefusalReason::OverContext;
        r.message = "prompt of " + std::to_string(prompt.size()) + " tokens + " +
                    std::to_string(params.max_new_tokens) + " new tokens exceeds the model's context of " +
                    std::to_string(context) + " tokens";
    } else if (std::max(params.logprobs.value_or(0), params.prompt_logprobs.value_or(0)) > kMaxLogprobs) {
        r.reason = RefusalReason::BadSampling;
        r.message = "log-probabilities of the " +
                    std::to_string(std::max(params.logprobs.value_or(0), params.prompt_logprobs.value_or(0))) +
                    " most likely tokens asked; at most " + std::to_string(kMaxLogprobs) + " are given";
    } else if (outside_vocab != prompt.end()) {
        r.reason = RefusalReason::TokenOutsideVocab;
        r.message = "token id " + std::to_string(*outside_vocab) + " is outside the vocabulary";
    } else if (std::optional<KvRefusal> pool = kv_.never_fits(prompt.size(), params.max_new_tokens)) {
        r.reason = RefusalReason::OverPool;
        r.message = pool->reason;
        r.pool = std::move(pool);
    } else {
        try {
            Sampler check(params.sampling); // validates the sampling parameters
            return std::nullopt;
        } catch (const Error& e) {
            r.reason = RefusalReason::BadSampling;
            r.message = e.what();
        }
    }
    return r;
}

SeqId Engine::new_seq(RequestId request, std::uint32_t index) {
    const SeqId id = next_seq_++;
    Request& r = requests_.at(request);
    SamplingParams sampling = r.params.sampling;
    sampling.seed += index;
    seqs_.emplace(id, Seq{request, index, Sampler(sampling), StreamDecoder(*tokenizer_), {}, 0, 0});
    r.seqs.push_back(id);
    return id;
}

void Engine::abort(RequestId request) {
    const auto it = requests_.find(request);
    if (it == requests_.end())
        return;
    for (SeqId s : std::vector<SeqId>(it->second.seqs))
        if (seqs_.contains(s))
            finish(s, FinishReason::Abort);
}

void Engine::step() {
    const double started = now();
    last_batch_ = {};
    sampled_this_step_ = 0;
    step_expert_s_ = 0;
    const Schedule schedule = scheduler_.schedule();
    const std::uint64_t prompt_tokens = schedule.chunks.empty() ? 0 : run(schedule.chunks);
    std::erase_if(ended_seqs_, [&](const auto& e) { return kv_.pool().cached_blocks_of(e.first) == 0; });
    ++step_;
    last_step_expert_s_ = step_expert_s_;
    metrics_.on_step(started, now(), prompt_tokens, sampled_this_step_);
}

// A failed forward pass cannot say whose chunk made it fail, so each chunk
// runs again alone and only those that fail alone end with the error.
// Running a chunk again is safe: its K/V go to the same slots (see
// forward() for KIVI's tails). Returns the prompt tokens it computed.
std::uint64_t Engine::run(std::span<const ScheduledChunk> chunks) {
    std::uint64_t prompt_tokens = 0;
    if (const std::string error = forward(chunks, false); error.empty()) {
        prompt_tokens = use_logits(chunks);
    } else if (chunks.size() == 1) {
        finish(chunks.front().seq, FinishReason::Error, error);
    } else {
        logger("engine")->warn("a batch of {} sequences failed ({}); running them one at a time", chunks.size(),
                               error);
        for (const ScheduledChunk& c : chunks) {
            if (const std::string alone = forward({&c, 1}, true); alone.empty())
                prompt_tokens += use_logits({&c, 1});
            else
                finish(c.seq, FinishReason::Error, alone);
        }
    }
    return prompt_tokens;
}

// Runs the chunks' forward pass into logits_; returns the error, empty when
// it ran. from_block_start (a rerun after a failure): with a KIVI dtype a
// chunk starts again at its first block's start, because the failed run
// may have sealed that block and then written the next block's tokens over
// the f16 tail rows holding the block's earlier tokens; recomputing those
// tokens (same inputs, same results) fills the tail rows again.
std::string Engine::forward(std::span<const ScheduledChunk> chunks, bool from_block_start) {
    const bool restart_blocks = from_block_start && seals_blocks(kv_.layout().dtype());
    batch_.clear();
    for (const ScheduledChunk& c : chunks) {
        const std::uint32_t start = restart_blocks ? c.start - c.start % kv_.layout().block_size() : c.start;
        const auto tokens = std::span<const TokenId>(scheduler_.seq(c.seq).tokens);
        batch_.push_back({c.seq, tokens.subspan(start, c.start + c.count - start), start, c.samples, c.all_logits});
    }
    try {
        runner_->forward(batch_, kv_, logits_);
        step_expert_s_ += runner_->last_expert_seconds();
        return {};
    } catch (const Error& e) {
        return e.what();
    }
}

// After the chunks ran (batch_, in the same order): their K/V are computed,
// a chunk with every row of logits keeps its prompt log-probabilities, and
// each chunk that reaches the end of its tokens samples one from its last
// row. Returns the prompt tokens among them.
std::uint64_t Engine::use_logits(std::span<const ScheduledChunk> chunks) {
    const std::size_t vocab = model_->config().vocab_size;
    std::size_t row = 0;
    std::uint64_t prompt_tokens = 0;
    for (std::size_t i = 0; i < chunks.size(); ++i) {
        const ScheduledChunk& c = chunks[i];
        const auto rows = std::span<const float>(logits_).subspan(row * vocab, batch_[i].logit_rows() * vocab);
        row += batch_[i].logit_rows();
        const std::uint32_t prompt = requests_.at(seqs_.at(c.seq).request).prompt_tokens;
        if (c.start < prompt)
            prompt_tokens += c.count;
        if (c.count == 1 && c.start >= prompt)
            ++last_batch_.decodes;
        else
            last_batch_.prefill_tokens += c.count;
        scheduler_.mark_computed(c.seq, c.start + c.count);
        if (batch_[i].all_logits)
            keep_prompt_logprobs(batch_[i], rows);
        if (!c.samples)
            continue;
        const auto l = rows.last(vocab);
        fork_samples(c.seq, l);
        sample(c.seq, l);
    }
    return prompt_tokens;
}

// The logits at position p predict prompt token p + 1. A recomputed
// sequence (preempted, or a failed batch's rerun) brings rows it gave
// before: each prompt token's log-probabilities are kept once, in order.
void Engine::keep_prompt_logprobs(const SeqChunk& ran, std::span<const float> rows) {
    const std::size_t vocab = model_->config().vocab_size;
    Request& r = requests_.at(seqs_.at(ran.seq).request);
    const std::vector<TokenId>& tokens = scheduler_.seq(ran.seq).tokens;
    for (std::size_t i = 0; i < ran.tokens.size(); ++i) {
        const std::size_t target = ran.start + i + 1;
        if (target == r.prompt_logprobs.size() + 1 && target < r.prompt_tokens)
            r.prompt_logprobs.push_back(
                position_logprobs(rows.subspan(i * vocab, vocab), tokens[target], *r.params.prompt_logprobs));
    }
}

// The first token of a request with n > 1: the other samples start here,
// sharing the prompt's blocks, and draw their own first token from the same
// logits.
void Engine::fork_samples(SeqId parent, std::span<const float> logits) {
    Request& r = requests_.at(seqs_.at(parent).request);
    if (r.forked || r.params.n <= 1)
        return;
    r.forked = true;
    const RequestId request = seqs_.at(parent).request;
    for (std::uint32_t i = 1; i < r.params.n; ++i) {
        const SeqId child = new_seq(request, i);
        if (scheduler_.fork(parent, child) == SeqStatus::Running)
            sample(child, logits);
    }
}

bool Engine::is_stop_token(const Request& r, TokenId token) const {
    if (!r.params.ignore_eos && tokenizer_->is_stop_token(token)) // EOS and end-of-turn tokens
        return true;
    return std::find(r.params.stop_tokens.begin(), r.params.stop_tokens.end(), token) != r.params.stop_tokens.end();
}

void Engine::sample(SeqId id, std::span<const float> logits) {
    Seq& s = seqs_.at(id);
    Request& r = requests_.at(s.request);
    const TokenId token = s.sampler.sample(logits, scheduler_.seq(id).tokens);
    const double t = now();
    if (!r.first_token_seen) {
        r.first_token_seen = true;
        metrics_.on_first_token(t - r.arrival);
    } else if (s.generated > 0) {
        metrics_.on_next_token(t - s.last_token_time);
    }
    s.last_token_time = t;
    ++s.generated;
    ++sampled_this_step_;
    RequestOutput out{s.request, s.index, {}, {token}, std::nullopt, {}};
    if (r.params.logprobs)
        out.logprobs.push_back(position_logprobs(logits, token, *r.params.logprobs));
    if (s.generated == 1)
        out.prompt_logprobs = r.prompt_logprobs;
    const bool drawn_end = r.params.end_after_tokens > 0 && s.generated > r.params.end_after_tokens;
    if (is_stop_token(r, token) || drawn_end) {
        out.text = s.decoder.flush();
        end_with(id, std::move(out), FinishReason::Stop);
        return;
    }
    scheduler_.append_token(id, token);
    std::string piece = s.decoder.push(token);
    const std::size_t old_size = s.text.size();
    s.text += piece;
    for (const std::string& stop : r.params.stop_strings) {
        // Only where the new piece could complete a match.
        const std::size_t from = old_size >= stop.size() ? old_size - stop.size() + 1 : 0;
        const std::size_t at = stop.empty() ? std::string::npos : s.text.find(stop, from);
        if (at != std::string::npos) {
            out.text = s.text.substr(old_size, at > old_size ? at - old_size : 0);
            end_with(id, std::move(out), FinishReason::Stop);
            return;
        }
    }
    if (s.generated >= r.params.max_new_tokens) {
        out.text = piece + s.decoder.flush();
        end_with(id, std::move(out), FinishReason::Length);
        return;
    }
    out.text = std::move(piece);
    publish(out);
}

// The sequence's last output, then its end.
void Engine::end_with(SeqId id, RequestOutput out, FinishReason reason) {
    out.finish = reason;
    publish(out);
    finish(id, reason);
}

// Frees the sequence's blocks; the request ends with its last sequence.
// Outputs for Stop/Length were emitted by sample(); Abort/Error emit here.
void Engine::finish(SeqId id, FinishReason reason, const std::string& error) {
    const Seq s = std::move(seqs_.at(id));
    seqs_.erase(id);
    scheduler_.remove(id);
    if (kv_.pool().cached_blocks_of(id) > 0)
        ended_seqs_.emplace(id, EndedSeq{id, s.request, requests_.at(s.request).params.client_tag});
    Request& r = requests_.at(s.request);
    r.failed |= reason == FinishReason::Error;
    r.aborted |= reason == FinishReason::Abort;
    if (reason == FinishReason::Abort || reason == FinishReason::Error) {
        publish({s.request, s.index, {}, {}, reason, error});
        // Samples not yet forked off this one end with it.
        for (std::uint32_t i = 1; !r.forked && i < r.params.n; ++i, --r.open)
            publish({s.request, i, {}, {}, reason, error});
        r.forked = true;
    }
    if (--r.open == 0) {
        count_end(r);
        requests_.erase(s.request);
    }
}

void Engine::count_end(const Request& r) {
    if (r.failed)
        ++failed_;
    else if (r.aborted)
        ++aborted_;
    else
        ++completed_;
}

void Engine::publish(const RequestOutput& out) const {
    if (on_output_)
        on_output_(out);
}

std::shared_ptr<const EngineSnapshot> Engine::snapshot() const {
    auto snap = std::make_shared<EngineSnapshot>();
    const double t = now();
    snap->step = step_;
    snap->time_s = t;
    snap->pool = kv_.snapshot();
    std::map<SeqId, std::uint32_t> queue_position;
    for (const SeqId id : scheduler_.waiting_queue())
        queue_position.emplace(id, static_cast<std::uint32_t>(queue_position.size()));
    for (const auto& [id, s] : seqs_) {
        const SchedSeq& q = scheduler_.seq(id);
        const Request& r = requests_.at(s.request);
        const auto position = queue_position.find(id);
        snap->seqs.push_back({id, s.request, s.index, q.status, r.prompt_tokens, s.generated,
                              position != queue_position.end() ? std::optional(position->second) : std::nullopt,
                              r.params.client_tag});
    }
    for (const auto& entry : ended_seqs_)
        snap->ended_seqs.push_back(entry.second);
    snap->running = scheduler_.num_running();
    snap->waiting = scheduler_.num_waiting();
    snap->swapped = scheduler_.num_swapped();
    snap->preemptions = scheduler_.preemptions();
    snap->completed_requests = completed_;
    snap->aborted_requests = aborted_;
    snap->failed_requests = failed_;
    snap->refused_requests = refused_;
    snap->prompt_tokens = metrics_.prompt_tokens();
    snap->generated_tokens = metrics_.generated_tokens();
    snap->prompt_tokens_per_s = metrics_.prompt_tokens_per_s();
    snap->generation_tokens_per_s = metrics_.generation_tokens_per_s();
    snap->busy_s = metrics_.busy_s();
    snap->last_step_s = metrics_.last_step_s();
    snap->last_step_expert_s = last_step_expert_s_;
    snap->ttft = metrics_.ttft();
    snap->itl = metrics_.itl();
    snap->prefix_hit_tokens = snap->pool->prefix_hit_tokens;
    snap->prefix_hit_rate = snap->pool->prefix_query_tokens
                                ? static_cast<double>(snap->pool->prefix_hit_tokens) /
                                      static_cast<double>(snap->pool->prefix_query_tokens)
                                : 0.0;
    snap->device.backend = backend_;
    snap->device.kv_memory = kv_.config().memory;
    const ComputeDevice device = backend_ == Backend::Cuda ? device_memory() : host_device();
    snap->device.name = device.name;
    if (snap->device.kv_memory == MemoryPlace::Cuda) { // free VRAM now, not at load
        snap->device.memory_total = device.memory_total;
        snap->device.memory_free = device.memory_free;
    }
    return snap;
}

} // namespace kvscope
