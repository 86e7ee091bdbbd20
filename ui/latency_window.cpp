#include "ui/latency_window.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace kvscope::ui {
namespace {

// The value below which a share `q` of the sorted samples lie (nearest rank).
double quantile(const std::vector<double>& sorted, double q) {
    const auto rank = static_cast<std::size_t>(std::ceil(q * static_cast<double>(sorted.size())));
    return sorted[std::clamp<std::size_t>(rank, 1, sorted.size()) - 1];
}

} // namespace

LatencyWindow::LatencyWindow(double span_s) : span_s_(std::max(span_s, 0.0)) {}

void LatencyWindow::record(double time_s, double late_ms) {
    late_ms = std::max(late_ms, 0.0);
    recent_.push_back({time_s, late_ms});
    while (recent_.front().time_s < time_s - span_s_)
        recent_.pop_front();
    const auto bucket = static_cast<std::size_t>(late_ms);
    ++buckets_[std::min(bucket, kBuckets - 1)];
    ++run_samples_;
    run_worst_ms_ = std::max(run_worst_ms_, late_ms);
}

LatencySummary LatencyWindow::recent(double span_s) const {
    if (recent_.empty())
        return {};
    const double from = recent_.back().time_s - std::min(span_s, span_s_);
    std::vector<double> late;
    for (const Sample& s : recent_)
        if (s.time_s >= from)
            late.push_back(s.late_ms);
    std::sort(late.begin(), late.end());
    return {late.size(), late.back(), quantile(late, 0.95), quantile(late, 0.5)};
}

double LatencyWindow::bucket_quantile(double q) const {
    const auto rank = std::max<std::uint64_t>(
        1, static_cast<std::uint64_t>(std::ceil(q * static_cast<double>(run_samples_))));
    std::uint64_t seen = 0;
    for (std::size_t b = 0; b < kBuckets; ++b) {
        seen += buckets_[b];
        if (seen >= rank)
            return std::min(static_cast<double>(b + 1), run_worst_ms_);
    }
    return run_worst_ms_;
}

LatencySummary LatencyWindow::whole_run() const {
    if (run_samples_ == 0)
        return {};
    return {run_samples_, run_worst_ms_, bucket_quantile(0.95), bucket_quantile(0.5)};
}

} // namespace kvscope::ui
