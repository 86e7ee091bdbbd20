// engine/: one request run to its end on an Engine, for the front ends that
// serve one request at a time (kvscope-cli generate, chat, bench decode) and
// the reference tests: what it generated and how long prefill and decode took.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "engine/engine.h"

namespace kvscope {

struct Completion {
    std::vector<TokenId> tokens; // generated, with the stop token that ended it (if one did)
    std::string text;            // the generated text, without stop tokens and stop strings
    FinishReason finish = FinishReason::Length;
    std::vector<PositionLogprobs> logprobs;        // with RequestParams::logprobs: one per entry of `tokens`
    std::vector<PositionLogprobs> prompt_logprobs; // with RequestParams::prompt_logprobs: prompt tokens 1, 2, ...
    double prefill_seconds = 0; // from add_request to the first token
    double decode_seconds = 0;  // from the first token to the last
};

// `config` for an engine that runs one request of up to `tokens` tokens
// (prompt + max_new_tokens) at a time: a KV pool of exactly the blocks they
// need, the whole prompt in one prefill chunk, no admission watermark and
// no swap pool (one request is never preempted).
EngineConfig config_for_one_request(EngineConfig config, const ModelConfig& model, std::size_t tokens);

// Adds the request (one sample: params.n = 1), steps the engine until it ends and returns
// what it produced; `on_output` sees each of its outputs as they stream.
// The engine must have no other work (its steps would be timed as this
// request's); the call takes over the engine's output callback. Throws
// kvscope::Error when the engine is busy or n is not 1 and, with the request's message,
// when the request ends with FinishReason::Error (empty prompt, prompt +
// max_new_tokens beyond the context, a kernel's refusal, ...).
Completion run_to_completion(Engine& engine, std::vector<TokenId> prompt, const RequestParams& params,
                             const Engine::OutputCallback& on_output = {});

} // namespace kvscope
