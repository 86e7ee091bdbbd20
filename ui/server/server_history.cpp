#include "ui/server/server_history.h"

#include <algorithm>
#include <set>

namespace kvscope::ui {
namespace {

ServerHistoryPoint pointOf(const attach::RemoteSample& sample, double data_time_s) {
    const attach::ServerFigures& f = sample.total;
    ServerHistoryPoint p;
    p.time_s = data_time_s;
    p.kv_usage = f.kv_usage;
    if (f.kv_tokens_used)
        p.kv_tokens_used = static_cast<double>(*f.kv_tokens_used);
    p.running = f.running;
    p.waiting = f.waiting;
    p.generation_tokens_per_s = f.generation_tokens_per_s;
    p.prompt_tokens_per_s = f.prompt_tokens_per_s;
    p.ttft_p50_ms = f.ttft.p50_ms;
    p.ttft_p99_ms = f.ttft.p99_ms;
    for (const attach::RankSample& r : sample.ranks)
        if (r.figures.kv_usage)
            p.ranks.push_back({r.rank, *r.figures.kv_usage});
    return p;
}

} // namespace

bool ServerHistory::startsAfresh(const attach::RemoteSample& sample) const {
    return sample.url != url_ || sample.kind != kind_ || sample.time_s < last_sample_s_;
}

bool ServerHistory::add(const attach::RemoteSample& sample) {
    if (startsAfresh(sample)) {
        clear();
        url_ = sample.url;
        kind_ = sample.kind;
    }
    last_sample_s_ = sample.time_s;
    if (sample.link != attach::LinkState::Live) {
        gap_ = !points_.empty();
        return false;
    }
    // The data's own time: a sample re-published without a new poll holds
    // the same data, read at the same moment.
    const double data_time_s = sample.time_s - sample.data_age_s.value_or(0.0);
    if (!points_.empty() && data_time_s <= points_.back().time_s)
        return false;
    ServerHistoryPoint point = pointOf(sample, data_time_s);
    // A server that restarted between two live polls: its counters began
    // again, so its lines do too.
    point.after_gap = !points_.empty() && (gap_ || sample.reconnects != reconnects_);
    points_.push_back(std::move(point));
    reconnects_ = sample.reconnects;
    gap_ = false;
    if (points_.size() > kMaxPoints)
        thin();
    return true;
}

// Drops every other point older than the full-resolution window (all but
// the newest when samples come so fast that the window alone fills the
// history). A dropped point's gap moves to the point after it, so a gap is
// never drawn over.
void ServerHistory::thin() {
    const double recent_from = points_.back().time_s - kFullResolutionS;
    auto end = std::lower_bound(points_.begin(), points_.end(), recent_from,
                                [](const ServerHistoryPoint& p, double t) { return p.time_s < t; });
    if (static_cast<std::size_t>(end - points_.begin()) < kMaxPoints / 2)
        end = points_.end() - 1;
    std::vector<ServerHistoryPoint> kept;
    kept.reserve(points_.size());
    bool carried_gap = false;
    for (auto it = points_.begin(); it != points_.end(); ++it) {
        const bool drop = it < end && (it - points_.begin()) % 2 == 1;
        if (drop) {
            carried_gap = carried_gap || it->after_gap;
            continue;
        }
        kept.push_back(std::move(*it));
        kept.back().after_gap = kept.back().after_gap || carried_gap;
        carried_gap = false;
    }
    points_ = std::move(kept);
}

void ServerHistory::clear() {
    points_.clear();
    url_.clear();
    kind_ = attach::ServerKind::Kvscope;
    last_sample_s_ = 0;
    reconnects_ = 0;
    gap_ = false;
}

std::vector<int> ServerHistory::ranks() const {
    std::set<int> seen;
    for (const ServerHistoryPoint& p : points_)
        for (const RankUsage& r : p.ranks)
            seen.insert(r.rank);
    return {seen.begin(), seen.end()};
}

} // namespace kvscope::ui
