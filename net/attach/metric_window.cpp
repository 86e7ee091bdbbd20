#include "net/attach/metric_window.h"

#include <algorithm>
#include <cmath>

namespace kvscope::attach {

namespace {

// Adds (t, value), or replaces the newest when it is too close to the one
// before it.
template <class T>
void push(std::deque<std::pair<double, T>>& samples, double t, T value) {
    const std::size_t n = samples.size();
    if (n >= 2 && t - samples[n - 2].first < kMinSpacingS)
        samples.back() = {t, std::move(value)};
    else
        samples.emplace_back(t, std::move(value));
}

// Drops what lies more than kWindowS before the newest sample, and the
// oldest beyond kMaxSamples.
template <class T>
void trim(std::deque<std::pair<double, T>>& samples) {
    const double newest = samples.back().first;
    while (samples.size() > kMaxSamples || (samples.size() > 1 && samples.front().first < newest - kWindowS))
        samples.pop_front();
}

bool same_layout(const Buckets& a, const Buckets& b) {
    return std::ranges::equal(a, b, [](const auto& x, const auto& y) { return x.first == y.first; });
}

bool any_fell(const Buckets& before, const Buckets& now) {
    for (std::size_t i = 0; i < now.size(); ++i)
        if (now[i].second < before[i].second)
            return true;
    return false;
}

} // namespace

WindowAdd CounterWindow::add(double t, double value) {
    const bool reset = !samples_.empty() && value < samples_.back().second;
    if (reset)
        samples_.clear();
    push(samples_, t, value);
    trim(samples_);
    return reset ? WindowAdd::Reset : WindowAdd::Added;
}

std::optional<double> CounterWindow::delta() const {
    if (samples_.size() < 2)
        return std::nullopt;
    return samples_.back().second - samples_.front().second;
}

std::optional<double> CounterWindow::rate() const {
    const auto d = delta();
    const double span = samples_.size() < 2 ? 0 : samples_.back().first - samples_.front().first;
    if (!d || span <= 0)
        return std::nullopt;
    return *d / span;
}

std::optional<double> CounterWindow::latest() const {
    return samples_.empty() ? std::nullopt : std::optional(samples_.back().second);
}

WindowAdd HistogramWindow::add(double t, Buckets buckets) {
    const bool reset = !samples_.empty() && (!same_layout(samples_.back().second, buckets) ||
                                             any_fell(samples_.back().second, buckets));
    if (reset)
        samples_.clear();
    push(samples_, t, std::move(buckets));
    trim(samples_);
    return reset ? WindowAdd::Reset : WindowAdd::Added;
}

std::optional<double> HistogramWindow::quantile(double q) const {
    if (samples_.size() < 2)
        return std::nullopt;
    const Buckets& oldest = samples_.front().second;
    Buckets diff = samples_.back().second;
    for (std::size_t i = 0; i < diff.size(); ++i)
        diff[i].second -= oldest[i].second;
    return bucket_quantile(q, diff);
}

LatencyQuantiles HistogramWindow::quantiles_ms() const {
    const auto ms = [](std::optional<double> s) { return s ? std::optional(*s * 1000.0) : std::nullopt; };
    return {ms(quantile(0.5)), ms(quantile(0.99))};
}

// Prometheus' bucketQuantile (promql/quantile.go): counts forced monotonic,
// rank = q * total, the first bucket reaching the rank, linear between its
// lower bound (0 for the first bucket with a positive bound) and its upper.
std::optional<double> bucket_quantile(double q, const Buckets& buckets) {
    if (buckets.empty() || !std::isinf(buckets.back().first))
        return std::nullopt;
    Buckets b = buckets;
    for (std::size_t i = 1; i < b.size(); ++i)
        b[i].second = std::max(b[i].second, b[i - 1].second);
    const double total = b.back().second;
    if (!(total > 0))
        return std::nullopt;
    const double rank = std::clamp(q, 0.0, 1.0) * total;
    std::size_t i = 0;
    while (i + 1 < b.size() && b[i].second < rank)
        ++i;
    if (i == b.size() - 1) // the +Inf bucket: its highest finite bound
        return b.size() >= 2 ? std::optional(b[b.size() - 2].first) : std::nullopt;
    const double upper = b[i].first;
    if (i == 0 && upper <= 0)
        return upper;
    const double lower = i == 0 ? 0 : b[i - 1].first;
    const double below = i == 0 ? 0 : b[i - 1].second;
    const double in_bucket = b[i].second - below;
    if (in_bucket <= 0)
        return upper;
    return lower + (upper - lower) * (rank - below) / in_bucket;
}

} // namespace kvscope::attach
