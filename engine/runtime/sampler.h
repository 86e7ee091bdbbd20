// engine/runtime: the forward pass over the paged KV cache and token
// sampling. Depends on engine/model, engine/kv and kernels/.
#pragma once

#include <cstdint>
#include <random>
#include <span>
#include <vector>

#include "engine/kv/kv_ids.h"

namespace kvscope {

struct SamplingParams {
    float temperature = 0.0f;        // 0: greedy (argmax, first index on ties)
    std::uint32_t top_k = 0;         // 0: off
    float top_p = 1.0f;              // nucleus; 1: off
    float min_p = 0.0f;              // drop tokens below min_p * p(best); 0: off
    float repetition_penalty = 1.0f; // CTRL-style, over the last repetition_window tokens; 1: off
    std::uint32_t repetition_window = 64;
    std::uint64_t seed = 0;
};

// One token's log-probability.
struct TokenLogprob {
    TokenId token = 0;
    float logprob = 0;
};

// One position's log-probabilities under the model's own distribution: the
// log-softmax of the raw logits, before the repetition penalty, temperature
// or truncation change what is sampled (vLLM's default).
struct PositionLogprobs {
    TokenLogprob chosen;           // the token that came (sampled, or the prompt's next one)
    std::vector<TokenLogprob> top; // the most likely tokens, most likely first (ties: lower id first)
};

// `chosen`'s log-probability and the `top_n` most likely tokens' (fewer
// when the vocabulary is smaller) at one position. log p_i = x_i - max -
// log(sum_j exp(x_j - max)), summed in double. A logit of -inf gives -inf
// (while another is finite).
// Throws kvscope::Error for empty logits or `chosen` outside them.
PositionLogprobs position_logprobs(std::span<const float> logits, TokenId chosen, std::uint32_t top_n);

// Turns logits into a token. Steps, in llama.cpp's order: repetition
// penalty, then (unless greedy) temperature, top-k, softmax, top-p, min-p,
// and a draw from what is left. Same seed and inputs, same tokens.
class Sampler {
public:
    explicit Sampler(const SamplingParams& params);

    // `history`: the tokens so far (prompt and output), for the penalty.
    TokenId sample(std::span<const float> logits, std::span<const TokenId> history);

    const SamplingParams& params() const { return params_; }

private:
    struct Candidate {
        TokenId id;
        float logit;
        float p = 0;
    };
    void penalize(std::vector<Candidate>& c, std::span<const TokenId> history) const;
    void keep_top_k(std::vector<Candidate>& c) const;
    void to_probabilities(std::vector<Candidate>& c) const;
    void keep_top_p(std::vector<Candidate>& c) const;
    void keep_min_p(std::vector<Candidate>& c) const;
    TokenId draw(const std::vector<Candidate>& c);

    SamplingParams params_;
    std::mt19937_64 rng_;
};

} // namespace kvscope
