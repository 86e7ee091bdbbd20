#include "engine/runtime/perplexity.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "engine/core/error.h"

namespace kvscope {

std::vector<double> log_softmax(std::span<const float> logits) {
    if (logits.empty())
        throw Error("log_softmax of an empty set of logits");
    double max = -INFINITY;
    for (std::size_t i = 0; i < logits.size(); ++i) {
        if (!std::isfinite(logits[i]))
            throw Error("logit " + std::to_string(i) + " is not finite (" + std::to_string(logits[i]) + ")");
        max = std::max(max, static_cast<double>(logits[i]));
    }
    // Shifting by the maximum keeps every exp() in (0, 1]: no overflow, and
    // the largest term is exactly 1 so the sum never underflows.
    double sum = 0;
    for (float x : logits)
        sum += std::exp(static_cast<double>(x) - max);
    const double log_normalizer = max + std::log(sum);
    std::vector<double> out(logits.size());
    for (std::size_t i = 0; i < logits.size(); ++i)
        out[i] = static_cast<double>(logits[i]) - log_normalizer;
    return out;
}

double kl_divergence(std::span<const double> log_p, std::span<const double> log_q) {
    if (log_p.size() != log_q.size())
        throw Error("KL divergence of distributions over " + std::to_string(log_p.size()) + " and " +
                    std::to_string(log_q.size()) + " tokens");
    double kld = 0;
    for (std::size_t i = 0; i < log_p.size(); ++i) {
        const double p = std::exp(log_p[i]);
        if (p > 0)
            kld += p * (log_p[i] - log_q[i]);
    }
    // Rounding can leave a tiny negative sum for identical inputs; the true
    // value is never negative (Gibbs' inequality).
    return std::max(kld, 0.0);
}

std::size_t argmax(std::span<const double> values) {
    std::size_t best = 0;
    for (std::size_t i = 1; i < values.size(); ++i)
        if (values[i] > values[best])
            best = i;
    return best;
}

void NextTokenStats::add(std::span<const double> reference, std::span<const double> candidate, TokenId target) {
    if (target < 0 || static_cast<std::size_t>(target) >= candidate.size())
        throw Error("target token " + std::to_string(target) + " is outside the vocabulary of " +
                    std::to_string(candidate.size()));
    kld_sum_ += kl_divergence(reference, candidate); // checks the lengths
    nll_sum_ -= candidate[static_cast<std::size_t>(target)];
    top1_same_ += argmax(reference) == argmax(candidate) ? 1 : 0;
    ++positions_;
}

double NextTokenStats::perplexity() const {
    return positions_ > 0 ? std::exp(nll_sum_ / static_cast<double>(positions_)) : 0.0;
}

double NextTokenStats::mean_kld() const {
    return positions_ > 0 ? kld_sum_ / static_cast<double>(positions_) : 0.0;
}

double NextTokenStats::top1_agreement() const {
    return positions_ > 0 ? static_cast<double>(top1_same_) / static_cast<double>(positions_) : 0.0;
}

} // namespace kvscope
