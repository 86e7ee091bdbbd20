#include "engine/runtime/sampler.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <unordered_set>

#include "engine/core/error.h"

namespace kvscope {

namespace {

// log(sum_i exp(x_i)), in double around the largest logit.
double log_sum_exp(std::span<const float> logits) {
    const float max = *std::max_element(logits.begin(), logits.end());
    if (std::isinf(max))
        return max; // all -inf (or a +inf): nothing finite to normalise by
    double sum = 0;
    for (float x : logits)
        sum += std::exp(static_cast<double>(x) - max);
    return max + std::log(sum);
}

} // namespace

PositionLogprobs position_logprobs(std::span<const float> logits, TokenId chosen, std::uint32_t top_n) {
    if (logits.empty())
        throw Error("log-probabilities: no logits");
    if (chosen < 0 || static_cast<std::size_t>(chosen) >= logits.size())
        throw Error("log-probabilities: token " + std::to_string(chosen) + " is outside the " +
                    std::to_string(logits.size()) + " logits");
    const double lse = log_sum_exp(logits);
    auto entry = [&](std::size_t id) {
        return TokenLogprob{static_cast<TokenId>(id), static_cast<float>(logits[id] - lse)};
    };
    // The top_n largest logits are the top_n most likely tokens: a partial
    // sort of their ids, O(vocab log top_n).
    const std::size_t n = std::min<std::size_t>(top_n, logits.size());
    std::vector<std::size_t> ids(n);
    auto better = [&](std::size_t a, std::size_t b) { return logits[a] > logits[b] || (logits[a] == logits[b] && a < b); };
    std::size_t filled = 0;
    for (std::size_t i = 0; i < logits.size() && n > 0; ++i) {
        if (filled < n) {
            ids[filled++] = i;
            std::push_heap(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(filled), better);
        } else if (better(i, ids.front())) {
            std::pop_heap(ids.begin(), ids.end(), better);
            ids.back() = i;
            std::push_heap(ids.begin(), ids.end(), better);
        }
    }
    std::sort_heap(ids.begin(), ids.end(), better);
    PositionLogprobs p{entry(static_cast<std::size_t>(chosen)), {}};
    p.top.reserve(n);
    for (std::size_t id : ids)
        p.top.push_back(entry(id));
    return p;
}

Sampler::Sampler(const SamplingParams& params) : params_(params), rng_(params.seed) {
    auto bad = [](const std::string& what) { throw Error("sampling: " + what); };
    if (!(params.temperature >= 0.0f) || !std::isfinite(params.temperature))
        bad("temperature must be >= 0, got " + std::to_string(params.temperature));
    if (!(params.top_p > 0.0f && params.top_p <= 1.0f))
        bad("top-p must be in (0, 1], got " + std::to_string(params.top_p));
    if (!(params.min_p >= 0.0f && params.min_p < 1.0f))
        bad("min-p must be in [0, 1), got " + std::to_string(params.min_p));
    if (!(params.repetition_penalty > 0.0f) || !std::isfinite(params.repetition_penalty))
        bad("repetition penalty must be > 0, got " + std::to_string(params.repetition_penalty));
}

TokenId Sampler::sample(std::span<const float> logits, std::span<const TokenId> history) {
    if (logits.empty())
        throw Error("sampling: no logits");
    // One vocabulary-sized buffer per thread, reused: allocating it per
    // token would fault in fresh pages on every call.
    thread_local std::vector<Candidate> candidates;
    std::vector<Candidate>& c = candidates;
    c.resize(logits.size());
    for (std::size_t i = 0; i < logits.size(); ++i)
        c[i] = {static_cast<TokenId>(i), logits[i]};
    penalize(c, history);
    if (params_.temperature == 0.0f) // greedy: the first of the best
        return std::max_element(c.begin(), c.end(), [](const auto& a, const auto& b) { return a.logit < b.logit; })->id;
    for (Candidate& x : c)
        x.logit /= params_.temperature;
    keep_top_k(c);
    to_probabilities(c);
    keep_top_p(c);
    keep_min_p(c);
    return draw(c);
}

// Seen tokens become less likely: positive logits are divided by the
// penalty, negative ones multiplied (so both move down).
void Sampler::penalize(std::vector<Candidate>& c, std::span<const TokenId> history) const {
    if (params_.repetition_penalty == 1.0f)
        return;
    const std::size_t window = std::min<std::size_t>(params_.repetition_window, history.size());
    std::unordered_set<TokenId> seen(history.end() - static_cast<std::ptrdiff_t>(window), history.end());
    for (TokenId t : seen) {
        if (t < 0 || static_cast<std::size_t>(t) >= c.size())
            continue;
        float& l = c[static_cast<std::size_t>(t)].logit;
        l = l > 0 ? l / params_.repetition_penalty : l * params_.repetition_penalty;
    }
}

// Sorted by logit, descending (ties: lower id first); at most top_k kept.
void Sampler::keep_top_k(std::vector<Candidate>& c) const {
    auto better = [](const Candidate& a, const Candidate& b) { return a.logit > b.logit || (a.logit == b.logit && a.id < b.id); };
    const std::size_t k = params_.top_k == 0 ? c.size() : std::min<std::size_t>(params_.top_k, c.size());
    std::partial_sort(c.begin(), c.begin() + static_cast<std::ptrdiff_t>(k), c.end(), better);
    c.resize(k);
}

void Sampler::to_probabilities(std::vector<Candidate>& c) const {
    const float max = c.front().logit; // sorted
    double sum = 0;
    for (Candidate& x : c)
        sum += x.p = std::exp(x.logit - max);
    for (Candidate& x : c)
        x.p = static_cast<float>(x.p / sum);
}

// The smallest head of the sorted list whose probability reaches top_p.
void Sampler::keep_top_p(std::vector<Candidate>& c) const {
    if (params_.top_p >= 1.0f)
        return;
    double mass = 0;
    std::size_t keep = 0;
    while (keep < c.size() && mass < params_.top_p)
        mass += c[keep++].p;
    c.resize(std::max<std::size_t>(keep, 1));
}

void Sampler::keep_min_p(std::vector<Candidate>& c) const {
    if (params_.min_p <= 0.0f)
        return;
    const float floor = params_.min_p * c.front().p;
    const auto cut = std::find_if(c.begin() + 1, c.end(), [&](const Candidate& x) { return x.p < floor; });
    c.erase(cut, c.end());
}

TokenId Sampler::draw(const std::vector<Candidate>& c) {
    double total = 0;
    for (const Candidate& x : c)
        total += x.p;
    // 53 random bits -> [0, 1): the same on every standard library.
    const double u = static_cast<double>(rng_() >> 11) * 0x1.0p-53 * total;
    double acc = 0;
    for (const Candidate& x : c) {
        acc += x.p;
        if (u < acc)
            return x.id;
    }
    return c.back().id;
}

} // namespace kvscope
