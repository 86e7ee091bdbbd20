// net/attach: one Prometheus series over the monitor's polls, reduced to
// what `top` shows for the last minute: a counter's rate and a histogram's
// quantiles. Times are the poll's seconds (monotonic, given by the caller,
// so tests feed them). Each window keeps the samples of the last
// kWindowS seconds and at most kMaxSamples of them: memory stays bounded
// however long the monitor runs.
//
// A value (or any histogram bucket) lower than the one before means the
// server restarted and counts from zero again: add() says so, and the
// window restarts from that sample, so no rate spans the restart.
#pragma once

#include <cstddef>
#include <deque>
#include <optional>
#include <utility>
#include <vector>

#include "net/attach/remote_sample.h"

namespace kvscope::attach {

inline constexpr double kWindowS = 60;          // "the last minute"
inline constexpr std::size_t kMaxSamples = 256; // polls kept, whatever the interval
// A sample closer than this to the one before the newest replaces the
// newest instead of adding one, so fast polls (/kv/stream's 10 a second)
// still span the whole minute within kMaxSamples.
inline constexpr double kMinSpacingS = kWindowS / 240;

// What add() found.
enum class WindowAdd { Added, Reset };

class CounterWindow {
public:
    // The counter's value at time t (t not before the last one's).
    WindowAdd add(double t, double value);
    // Growth from the oldest kept sample to the newest; nullopt with fewer
    // than two samples since the start (or the last reset).
    std::optional<double> delta() const;
    // delta() per second of the time between them; nullopt as delta(), or
    // when they are at the same time.
    std::optional<double> rate() const;
    std::optional<double> latest() const;
    std::size_t size() const { return samples_.size(); }

private:
    std::deque<std::pair<double, double>> samples_; // (t, value), oldest first
};

// A histogram's cumulative buckets: (upper bound `le`, count), ascending
// le, +Inf last, as PromText::buckets gives them.
using Buckets = std::vector<std::pair<double, double>>;

class HistogramWindow {
public:
    // A changed bucket layout counts as a reset too.
    WindowAdd add(double t, Buckets buckets);
    // The q-quantile (0..1) of what was observed between the oldest kept
    // sample and the newest, as Prometheus' histogram_quantile computes it:
    // linear inside the bucket holding the rank; the +Inf bucket gives the
    // highest finite bound. nullopt: fewer than two samples, no
    // observation in between, or no +Inf bucket.
    std::optional<double> quantile(double q) const;
    // p50 and p99 in milliseconds, for a histogram in seconds.
    LatencyQuantiles quantiles_ms() const;
    std::size_t size() const { return samples_.size(); }

private:
    std::deque<std::pair<double, Buckets>> samples_;
};

// The quantile of one set of cumulative bucket counts (histogram_quantile
// on its own); nullopt for no observation or no +Inf bucket.
std::optional<double> bucket_quantile(double q, const Buckets& buckets);

} // namespace kvscope::attach
