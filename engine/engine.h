#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/admission.h"
#include "engine/engine_config.h"
#include "engine/engine_snapshot.h"
#include "engine/kv/kv_cache_manager.h"
#include "engine/runtime/model.h"
#include "engine/runtime/forward_pass.h"
#include "engine/runtime/sampler.h"
#include "engine/sched/scheduler.h"
#include "engine/serving_metrics.h"
#include "engine/tokenizer/stream_decoder.h"
#include "engine/tokenizer/tokenizer.h"

namespace kvscope {

// The most parallel samples one request may ask for (OpenAI's API allows
// 128 too). Each is a sequence the scheduler holds: without a cap,
// n = UINT32_MAX would exhaust memory.
inline constexpr std::uint32_t kMaxSamplesPerRequest = 128;

// The most alternatives a request may ask for at each position (OpenAI's
// limit and vLLM's default max_logprobs).
inline constexpr std::uint32_t kMaxLogprobs = 20;

struct RequestParams {
    SamplingParams sampling;           // sample i of n uses seed + i
    std::uint32_t n = 1;               // parallel samples sharing the prompt's blocks, 1..kMaxSamplesPerRequest
    std::uint32_t max_new_tokens = 128;
    std::vector<std::string> stop_strings; // the text ends before the first match
    std::vector<TokenId> stop_tokens;      // in addition to EOS and end-of-turn tokens
    bool ignore_eos = false;               // ignore EOS and end-of-turn tokens (benchmarks)
    // Benchmarks replaying drawn reply lengths: after this many tokens the
    // next one sampled is taken as EOS (Stop, not part of the reply), as if
    // the model had ended its reply there; 0: off.
    std::uint32_t end_after_tokens = 0;
    // With SchedulingPolicy::Priority, lower values are scheduled first and
    // preempted last (vLLM's convention); FCFS ignores it.
    std::int32_t priority = 0;
    // Who asked, as the caller names it (the app: the chat's number; 0: no
    // one in particular, such as a workload request or a server's client).
    // The engine only carries it into its snapshots, so a front end can
    // tell its requests apart without a map of its own.
    std::uint64_t client_tag = 0;
    // Log-probabilities (PositionLogprobs: the model's raw distribution,
    // before penalties, temperature or truncation), each with this many of
    // the most likely tokens, 0..kMaxLogprobs; nullopt: none. `logprobs`:
    // of each sampled token (RequestOutput::logprobs). `prompt_logprobs`: of
    // each prompt token after the first (RequestOutput::prompt_logprobs);
    // every prompt position then runs through the model, none taken from
    // the prefix cache (as vLLM does), and the forward pass returns each
    // position's logits. Requests without them pay nothing for either.
    std::optional<std::uint32_t> logprobs;
    std::optional<std::uint32_t> prompt_logprobs;
};

enum class FinishReason : std::uint8_t { Stop, Length, Abort, Error };
std::string_view to_string(FinishReason reason);

// What one step produced for one sequence: new text and ids, and how it
// ended when it did.
struct RequestOutput {
    RequestId request = 0;
    std::uint32_t index = 0; // which of the request's n samples
    std::string text;        // new text since the last output
    std::vector<TokenId> tokens;
    std::optional<FinishReason> finish;
    std::string error; // with FinishReason::Error
    // With RequestParams::logprobs: one per entry of `tokens`, in order.
    std::vector<PositionLogprobs> logprobs{};
    // With RequestParams::prompt_logprobs, in each sample's first output
    // with a token: prompt tokens 1, 2, ... (the first has no context to
    // be predicted from), each computed once whatever preemption recomputed.
    std::vector<PositionLogprobs> prompt_logprobs{};
};

// What the last step() computed: decode tokens (one per running sequence)
// and the tokens of prompt chunks (and of recomputed sequences).
struct StepBatch {
    std::uint32_t decodes = 0;
    std::uint32_t prefill_tokens = 0;
};

// The serving engine: requests in, streamed tokens out, a paged KV cache
// shared by everything in flight. Single-threaded: call add_request, abort,
// step and snapshot from one thread (the kernels parallelize inside step).
class Engine {
public:
    using OutputCallback = std::function<void(const RequestOutput&)>;
    // Builds the forward pass the engine runs: make_forward_pass, or in
    // tests one wrapping it (to make a kernel refuse one request's chunk).
    using ForwardPassFactory = std::function<std::unique_ptr<ForwardPass>(
        Backend resolved, const Model& model, const KvLayout& layout, int threads)>;

    // Throws kvscope::Error when the configuration cannot work with the
    // model (no KV block fits the budget, an unsupported KV dtype, ...).
    Engine(const EngineConfig& config, std::shared_ptr<const Model> model,
           const ForwardPassFactory& make_pass = make_forward_pass);

    void set_output_callback(OutputCallback callback) { on_output_ = std::move(callback); }

    // The new request's id, or a refusal for a request that can never run
    // (empty prompt, longer than the model's context, larger than the whole
    // KV pool, bad sampling parameters, ...): a refused request gets no id
    // and no output, and nothing else is affected.
    Admission add_request(std::string_view prompt, const RequestParams& params);
    Admission add_request(std::vector<TokenId> prompt, const RequestParams& params);
    // Why add_request would refuse the request; nothing when it would not.
    // Thread-safe: it reads only what the engine fixes at construction (the
    // model, the pool's size), so a service may check a request on the
    // submitting thread while another thread steps the engine.
    std::optional<RequestRefusal> refusal(std::span<const TokenId> prompt, const RequestParams& params) const;
    void abort(RequestId request);

    // Schedules and runs one batch. Never throws for a request's sake: a
    // failing request ends with FinishReason::Error and the others go on
    // (when a batch's forward pass fails, its chunks run again one at a
    // time and only those that fail alone end).
    void step();
    bool has_work() const { return scheduler_.has_work(); }
    const StepBatch& last_batch() const { return last_batch_; }

    std::shared_ptr<const EngineSnapshot> snapshot() const;
    const EngineConfig& config() const { return config_; }
    const Model& model() const { return *model_; }
    int threads() const { return threads_; } // this engine's kernel threads (config.threads resolved)
    const Tokenizer& tokenizer() const { return *tokenizer_; }
    const KvCacheManager& kv() const { return kv_; }
    const Scheduler& scheduler() const { return scheduler_; }
    // The backend that runs (cpu or cuda; config().backend may say auto).
    Backend backend() const { return backend_; }

private:
    struct Request {
        RequestParams params;
        std::uint32_t prompt_tokens = 0;
        std::vector<SeqId> seqs;
        std::uint32_t open = 0; // sequences not finished
        bool forked = false;
        // How the request's samples ended so far: it counts as failed when
        // one failed, else aborted when one was aborted, else completed.
        bool failed = false, aborted = false;
        double arrival = 0;
        bool first_token_seen = false;
        std::vector<PositionLogprobs> prompt_logprobs; // so far, with params.prompt_logprobs
    };
    struct Seq {
        RequestId request = 0;
        std::uint32_t index = 0;
        Sampler sampler;
        StreamDecoder decoder;
        std::string text; // all generated text, for stop strings
        std::uint32_t generated = 0;
        double last_token_time = 0;
    };

    double now() const;
    SeqId new_seq(RequestId request, std::uint32_t index);
    std::uint64_t run(std::span<const ScheduledChunk> chunks);
    std::string forward(std::span<const ScheduledChunk> chunks, bool from_block_start);
    std::uint64_t use_logits(std::span<const ScheduledChunk> chunks);
    void keep_prompt_logprobs(const SeqChunk& ran, std::span<const float> rows);
    void fork_samples(SeqId parent, std::span<const float> logits);
    void sample(SeqId id, std::span<const float> logits);
    bool is_stop_token(const Request& r, TokenId token) const;
    void end_with(SeqId id, RequestOutput out, FinishReason reason);
    void finish(SeqId id, FinishReason reason, const std::string& error = {});
    void count_end(const Request& r); // the ended request, as completed, aborted or failed
    void publish(const RequestOutput& out) const;

    EngineConfig config_;
    std::shared_ptr<const Model> model_;
    std::unique_ptr<Tokenizer> tokenizer_;
    Backend backend_;
    int threads_;
    KvCacheManager kv_;
    Scheduler scheduler_;
    std::unique_ptr<ForwardPass> runner_;
    std::vector<SeqChunk> batch_; // what the last forward() ran, as use_logits reads its rows
    std::vector<float> logits_;   // the last step's, kept to reuse its memory
    std::map<RequestId, Request> requests_;
    std::map<SeqId, Seq> seqs_;
    // Ended sequences still named as last holder by cached-free blocks
    // (EngineSnapshot::ended_seqs); pruned after each step, so at most one
    // per cached block.
    std::map<SeqId, EndedSeq> ended_seqs_;
    RequestId next_request_ = 1;
    SeqId next_seq_ = 1;
    std::uint64_t arrivals_ = 0;
    std::uint64_t step_ = 0;
    std::uint64_t completed_ = 0; // requests ended by stop or length
    std::uint64_t aborted_ = 0;
    std::uint64_t failed_ = 0;
    std::uint64_t refused_ = 0;
    std::uint64_t sampled_this_step_ = 0;
    double step_expert_s_ = 0;      // this step's forward passes' time in MoE FFNs
    double last_step_expert_s_ = 0; // the last finished step's
    StepBatch last_batch_;
    ServingMetrics metrics_;
    std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
    OutputCallback on_output_;
};

} // namespace kvscope
