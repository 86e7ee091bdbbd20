#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "engine/core/backend.h"
#include "engine/kv/kv_dtype.h"
#include "engine/kv/kv_ids.h"
#include "engine/kv/kv_layout.h"
#include "engine/runtime/model.h"
#include "engine/runtime/sampler.h"

namespace kvscope {

struct GenerateOptions {
    std::uint32_t max_new_tokens = 64;
    SamplingParams sampling;
    KvDtype kv_dtype = KvDtype::F16;
    std::uint32_t block_size = 16;
    Backend backend = Backend::Cpu; // auto: CUDA when there is a device (choose_backend)
    std::vector<TokenId> stop_tokens; // generation ends after emitting one of these
    // Called with each new token; return false to stop early.
    std::function<bool(TokenId)> on_token;
    // Called with the logits of every position from the prompt's last on
    // (teacher forcing and accuracy checks).
    std::function<void(std::span<const float>)> on_logits;
};

struct GenerateResult {
    std::vector<TokenId> tokens; // generated, without the prompt
    double prefill_seconds = 0;
    double decode_seconds = 0;   // all decode steps after the first token
    std::size_t kv_bytes = 0;    // the pool this sequence ran in, and its KIVI tail
};

class ForwardPass;

// Generates one sequence at a time through the paged KV cache, with one
// forward pass kept across calls: a chat keeps it for the whole
// conversation, so the CUDA pass uploads the weights once, not per turn.
// Each call gets a KV pool of exactly its prompt + max_new_tokens.
class Generator {
public:
    // The KV dtype, block size and backend come from `options` and stay;
    // throws kvscope::Error as choose_backend and make_forward_pass do.
    Generator(const Model& model, const GenerateOptions& options);
    ~Generator();

    // Prefill the prompt in one chunk, then decode token by token, each
    // step appending a slot and running the model; max_new_tokens,
    // sampling, stop tokens and callbacks from `options`. Throws
    // kvscope::Error when the prompt is empty or the prompt plus
    // max_new_tokens exceeds the model's context.
    GenerateResult run(std::span<const TokenId> prompt, const GenerateOptions& options);

    Backend backend() const { return backend_; }

private:
    const Model& model_;
    KvLayout layout_;
    Backend backend_;
    std::unique_ptr<ForwardPass> pass_;
};

// One sequence: Generator(model, options).run(prompt, options).
GenerateResult generate(const Model& model, std::span<const TokenId> prompt, const GenerateOptions& options);

// Teacher forcing: feeds `tokens` one position at a time and returns the
// logits at every position (tokens.size() x vocab_size).
std::vector<float> teacher_forced_logits(const Model& model, std::span<const TokenId> tokens, KvDtype kv_dtype,
                                         std::uint32_t block_size = 16);

} // namespace kvscope
