#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <deque>

namespace kvscope::ui {

// How late the UI thread's periodic timer fired, summarised.
struct LatencySummary {
    std::size_t samples = 0;
    double worst_ms = 0;
    double p95_ms = 0;
    double median_ms = 0;
};

// The lateness samples of the UI latency probe (UiLatencyProbe), without
// Qt: the last `span_s` seconds kept sample by sample (worst and p95 over
// them), and the whole run in 1 ms buckets, so a run of any length costs
// the same memory. Times are the caller's clock in seconds, non-decreasing.
class LatencyWindow {
public:
    static constexpr double kDefaultSpanS = 60;

    explicit LatencyWindow(double span_s = kDefaultSpanS);

    void record(double time_s, double late_ms);

    // The samples of the last `span_s` seconds (at most the window's span)
    // before the latest one: exact worst, p95 and median.
    LatencySummary recent(double span_s) const;
    LatencySummary recent() const { return recent(span_s_); }
    // Every sample since construction. Worst is exact; the median and p95
    // are the upper edge of their 1 ms bucket (the last bucket is open).
    LatencySummary whole_run() const;

private:
    struct Sample {
        double time_s;
        double late_ms;
    };
    static constexpr std::size_t kBuckets = 2000; // 1 ms each; later ones land in the last

    double bucket_quantile(double q) const;

    double span_s_;
    std::deque<Sample> recent_;
    std::array<std::uint64_t, kBuckets> buckets_{};
    std::size_t run_samples_ = 0;
    double run_worst_ms_ = 0;
};

} // namespace kvscope::ui
