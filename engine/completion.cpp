#include "engine/completion.h"

#include <algorithm>
#include <chrono>
#include <optional>

#include "engine/core/error.h"

namespace kvscope {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_between(Clock::time_point from, Clock::time_point to) {
    return std::chrono::duration<double>(to - from).count();
}

} // namespace

EngineConfig config_for_one_request(EngineConfig config, const ModelConfig& model, std::size_t tokens) {
    config.max_num_seqs = 1;
    config.max_num_batched_tokens = std::max(config.max_num_batched_tokens, static_cast<std::uint32_t>(tokens));
    config.block_size = std::max<std::uint32_t>(config.block_size, 1); // 0: the engine says why
    const KvLayout layout = engine_kv_layout(config, model);
    config.num_blocks = static_cast<std::uint32_t>(
        layout.sequence_blocks(std::max<std::size_t>(tokens, 1), config.max_num_batched_tokens));
    config.watermark = 0;
    config.preemption = PreemptionMode::Recompute;
    return config;
}

Completion run_to_completion(Engine& engine, std::vector<TokenId> prompt, const RequestParams& params,
                             const Engine::OutputCallback& on_output) {
    if (engine.has_work())
        throw Error("run_to_completion needs an idle engine: it has requests in flight");
    if (params.n != 1)
        throw Error("run_to_completion runs one sample (n = 1), not " + std::to_string(params.n));
    Completion c;
    std::optional<std::string> error;
    bool done = false;
    const Clock::time_point start = Clock::now();
    if (const Admission admitted = engine.add_request(std::move(prompt), params); !admitted.accepted())
        throw Error(admitted.refusal()->message);
    Clock::time_point first_token = start, last_token = start;
    engine.set_output_callback([&](const RequestOutput& out) {
        if (c.tokens.empty() && !out.tokens.empty())
            first_token = Clock::now();
        if (!out.tokens.empty())
            last_token = Clock::now();
        c.tokens.insert(c.tokens.end(), out.tokens.begin(), out.tokens.end());
        c.logprobs.insert(c.logprobs.end(), out.logprobs.begin(), out.logprobs.end());
        c.prompt_logprobs.insert(c.prompt_logprobs.end(), out.prompt_logprobs.begin(), out.prompt_logprobs.end());
        c.text += out.text;
        if (out.finish) {
            c.finish = *out.finish;
            done = true;
            if (*out.finish == FinishReason::Error)
                error = out.error;
        }
        if (on_output)
            on_output(out);
    });
    while (!done && engine.has_work())
        engine.step();
    engine.set_output_callback({});
    if (error)
        throw Error(*error);
    c.prefill_seconds = seconds_between(start, first_token);
    c.decode_seconds = seconds_between(first_token, last_token);
    return c;
}

} // namespace kvscope
