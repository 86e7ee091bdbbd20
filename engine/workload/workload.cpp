#include "engine/workload/workload.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <string>

#include "engine/core/error.h"

namespace kvscope {
namespace {

// ShareGPT-like lengths: log-normal with medians of 100 prompt and 200
// output tokens and sigma 1.0 (means ~165 and ~330, close to the 161 / 338
// the PagedAttention paper reports for ShareGPT), then capped so that
// prompt + output <= max_total.
constexpr double kShareGptPromptMedian = 100, kShareGptOutputMedian = 200, kShareGptSigma = 1.0;

struct Lengths {
    std::uint32_t prompt, output;
};

Lengths draw_lengths(const WorkloadSpec& s, std::mt19937_64& rng) {
    auto uniform = [&](std::uint32_t hi) {
        return std::uniform_int_distribution<std::uint32_t>(s.min_len, std::max(s.min_len, hi))(rng);
    };
    auto log_normal = [&](double median) {
        const double x = std::lognormal_distribution<double>(std::log(median), kShareGptSigma)(rng);
        return static_cast<std::uint32_t>(std::clamp(x, double(s.min_len), double(s.max_total)));
    };
    switch (s.distribution) {
    case LengthDistribution::Fixed: return {s.prompt_len, s.output_len};
    case LengthDistribution::Uniform: return {uniform(s.prompt_len), uniform(s.output_len)};
    case LengthDistribution::ShareGpt: return {log_normal(kShareGptPromptMedian), log_normal(kShareGptOutputMedian)};
    }
    return {s.prompt_len, s.output_len};
}

// Keeps both parts at least min_len and the sum within max_total, shrinking
// them in proportion.
Lengths cap(Lengths l, const WorkloadSpec& s) {
    if (l.prompt + l.output <= s.max_total)
        return l;
    const double scale = static_cast<double>(s.max_total) / (l.prompt + l.output);
    l.prompt = std::max(s.min_len, static_cast<std::uint32_t>(l.prompt * scale));
    l.output = std::max(s.min_len, s.max_total - l.prompt);
    return l;
}

} // namespace

std::string_view to_string(LengthDistribution d) {
    switch (d) {
    case LengthDistribution::Fixed: return "fixed";
    case LengthDistribution::Uniform: return "uniform";
    case LengthDistribution::ShareGpt: return "sharegpt";
    }
    return "?";
}

LengthDistribution parse_length_distribution(std::string_view word) {
    for (auto d : {LengthDistribution::Fixed, LengthDistribution::Uniform, LengthDistribution::ShareGpt})
        if (to_string(d) == word)
            return d;
    throw Error("unknown length distribution '" + std::string(word) + "' (expected fixed, uniform or sharegpt)");
}

std::vector<WorkloadRequest> make_workload(const WorkloadSpec& s) {
    if (s.vocab <= 3 || s.min_len == 0 || 2 * s.min_len + s.shared_prefix + 1 > s.max_total)
        throw Error("workload: the vocabulary, min_len, shared prefix and max_total leave no room for a request");
    std::mt19937_64 rng(s.seed);
    std::uniform_int_distribution<TokenId> token(3, static_cast<TokenId>(s.vocab) - 1);
    std::vector<TokenId> prefix{1};
    for (std::uint32_t i = 0; i < s.shared_prefix; ++i)
        prefix.push_back(token(rng));
    WorkloadSpec body = s;
    body.max_total = s.max_total - static_cast<std::uint32_t>(prefix.size());
    std::vector<WorkloadRequest> out;
    double t = 0;
    std::exponential_distribution<double> gap(s.arrival_rate > 0 ? s.arrival_rate : 1.0);
    for (std::uint32_t r = 0; r < s.requests; ++r) {
        const Lengths l = cap(draw_lengths(body, rng), body);
        WorkloadRequest w;
        w.prompt = prefix;
        for (std::uint32_t i = 0; i < l.prompt; ++i)
            w.prompt.push_back(token(rng));
        w.output_len = l.output;
        w.max_new_tokens = s.oracle_lengths ? l.output : std::max(l.output, s.max_total - static_cast<std::uint32_t>(w.prompt.size()));
        if (s.arrival_rate > 0)
            t += gap(rng);
        w.arrival_s = t;
        out.push_back(std::move(w));
    }
    return out;
}

} // namespace kvscope
