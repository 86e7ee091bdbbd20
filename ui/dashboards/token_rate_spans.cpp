#include "ui/dashboards/token_rate_spans.h"

#include <algorithm>
#include <cstdint>

namespace kvscope::ui {
namespace {

// Idle time shorter than this is drawn as part of the work: a few pixels at
// the plot's scale, and splitting it off would draw every hiccup of a busy
// machine (the engine thread waiting for a core) as a spike.
constexpr double kShortestIdleS = 0.25;

double per_s(std::uint64_t before, std::uint64_t after, double seconds) {
    return after > before ? static_cast<double>(after - before) / seconds : 0.0;
}

// Appends the spans of the interval from entry a to entry b.
void add_interval(const SnapshotFigures& a, const SnapshotFigures& b, std::vector<TokenRateSpan>& spans) {
    const double seconds = b.time_s - a.time_s;
    if (seconds <= 0)
        return;
    const double busy = std::clamp(b.busy_s - a.busy_s, 0.0, seconds);
    if (busy <= 0) {
        spans.push_back({a.time_s, b.time_s, 0, 0});
        return;
    }
    const double idle = seconds - busy;
    const bool mostlyIdle = idle > busy && idle >= kShortestIdleS;
    const double workFrom = mostlyIdle ? b.time_s - busy : a.time_s;
    if (mostlyIdle)
        spans.push_back({a.time_s, workFrom, 0, 0});
    const double workSeconds = b.time_s - workFrom;
    spans.push_back({workFrom, b.time_s, per_s(a.prompt_tokens, b.prompt_tokens, workSeconds),
                     per_s(a.generated_tokens, b.generated_tokens, workSeconds)});
}

} // namespace

std::vector<TokenRateSpan> token_rate_spans(const std::deque<SnapshotFigures>& entries, std::size_t first) {
    std::vector<TokenRateSpan> spans;
    for (std::size_t i = first + 1; i < entries.size(); ++i)
        add_interval(entries[i - 1], entries[i], spans);
    return spans;
}

} // namespace kvscope::ui
