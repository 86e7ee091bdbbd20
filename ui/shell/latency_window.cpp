#include "ui/shell/latency_window.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "engine/core/percentiles.h"

namespace kvscope::ui {

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
    const double worst = *std::max_element(late.begin(), late.end());
    const Percentiles p = percentiles_ms(late);
    return {late.size(), worst, p.p95_ms, p.p50_ms};
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
