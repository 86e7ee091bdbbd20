// engine/runtime: the arithmetic of next-token accuracy — log-softmax,
// KL divergence, perplexity and top-1 agreement — on plain spans, so that
// tests can check it on hand-made logits without a model.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "engine/kv/kv_ids.h"

namespace kvscope {

// log p_i = x_i - max - log(sum_j exp(x_j - max)), accumulated in double so
// that a 100k-entry vocabulary loses nothing to float rounding. Throws
// kvscope::Error on empty or non-finite logits.
std::vector<double> log_softmax(std::span<const float> logits);

// KL(P || Q) = sum_i p_i (log p_i - log q_i) in nats, from log-probabilities
// of the same length. Entries where p underflows to 0 add nothing.
double kl_divergence(std::span<const double> log_p, std::span<const double> log_q);

// Index of the largest value, the first one on ties (greedy sampling's rule).
std::size_t argmax(std::span<const double> values);

// One candidate's next-token statistics over many positions, measured
// against a reference distribution at each position (f32 KV for the KV
// quantization table).
class NextTokenStats {
public:
    // `reference` and `candidate`: log-softmaxes of one position's logits;
    // `target`: the token that actually follows. Throws kvscope::Error when
    // the lengths differ or the target is outside the vocabulary.
    void add(std::span<const double> reference, std::span<const double> candidate, TokenId target);

    std::size_t positions() const { return positions_; }
    // exp(mean negative log-likelihood of the targets under the candidate).
    double perplexity() const;
    // Mean KL(reference || candidate), nats.
    double mean_kld() const;
    // Share of positions where both distributions rank the same token first.
    double top1_agreement() const;

private:
    double nll_sum_ = 0;
    double kld_sum_ = 0;
    std::size_t top1_same_ = 0;
    std::size_t positions_ = 0;
};

} // namespace kvscope
