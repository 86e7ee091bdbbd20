#include "engine/serving_metrics.h"

#include <algorithm>
#include <cmath>

namespace kvscope {

void ServingMetrics::on_step(double now, std::uint64_t prompt_tokens, std::uint64_t generated_tokens) {
    prompt_total_ += prompt_tokens;
    generated_total_ += generated_tokens;
    window_.push_back({now, prompt_tokens, generated_tokens});
    while (!window_.empty() && window_.front().time < now - window_s_)
        window_.pop_front();
}

// Tokens in the window over the time the window spans (at least since its
// first step), so a burst is not averaged with seconds of idleness.
double ServingMetrics::rate(double now, std::uint64_t Sample::*field) const {
    if (window_.size() < 2)
        return 0;
    std::uint64_t tokens = 0;
    for (auto it = window_.begin() + 1; it != window_.end(); ++it)
        tokens += (*it).*field;
    const double span = std::max(now, window_.back().time) - window_.front().time;
    return span > 0 ? static_cast<double>(tokens) / span : 0;
}

double ServingMetrics::prompt_tokens_per_s(double now) const { return rate(now, &Sample::prompt); }
double ServingMetrics::generation_tokens_per_s(double now) const { return rate(now, &Sample::generated); }

Percentiles ServingMetrics::percentiles(std::vector<double> values) {
    if (values.empty())
        return {};
    std::sort(values.begin(), values.end());
    auto at = [&](double q) {
        const auto i = static_cast<std::size_t>(std::ceil(q * static_cast<double>(values.size()))) - 1;
        return values[std::min(i, values.size() - 1)] * 1000.0;
    };
    return {at(0.50), at(0.95)};
}

} // namespace kvscope
