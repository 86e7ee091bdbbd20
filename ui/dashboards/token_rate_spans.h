#pragma once

#include <cstddef>
#include <deque>
#include <vector>

#include "ui/dashboards/snapshot_history.h"

namespace kvscope::ui {

// A stretch of time over which the throughput plot draws one rate, tokens/s.
// Idle stretches have rate 0.
struct TokenRateSpan {
    double from_s = 0, to_s = 0;
    double prompt_per_s = 0;
    double generation_per_s = 0;

    bool operator==(const TokenRateSpan&) const = default;
};

// What the throughput plot draws between consecutive history entries, from
// the growth of their token counts and of the engine's busy time (busy_s),
// not from samples of a rate, so no line joins two bursts across the idle
// time between them. Each interval's tokens become the area of its spans:
//  - no step ran (busy_s did not grow): one span at 0, idle;
//  - the engine was idle most of it, a quarter second or more: a span at 0,
//    then the work at tokens per busy second, placed last: the app
//    publishes a snapshot as soon as an engine goes idle, so idle time opens
//    an interval, never closes it;
//  - otherwise: one span at tokens per second of the interval (the short
//    waits between steps included, so steady load draws a flat line).
// The spans cover entries [first, end) from the first one's time to the
// last one's, in order, each starting where the previous one ends.
std::vector<TokenRateSpan> token_rate_spans(const std::deque<SnapshotFigures>& entries, std::size_t first = 0);

} // namespace kvscope::ui
