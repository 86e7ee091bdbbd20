// The figures of a llama.cpp or vLLM server over time, for the connected
// view's plots: plain C++ (no Qt), fed the RemoteSamples the window shows.
// A kvscope server's history is its engine snapshots' (SnapshotHistory in
// ui/dashboards), not this.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "net/attach/remote_sample.h"

namespace kvscope::ui {

// One rank's KV usage at a point (vLLM).
struct RankUsage {
    int rank = 0;
    double kv_usage = 0; // 0..1

    bool operator==(const RankUsage&) const = default;
};

// What the server reported at one moment; nullopt where it did not say.
struct ServerHistoryPoint {
    double time_s = 0;      // when the data was read, on the monitor's clock (sample time - data age)
    bool after_gap = false; // the link was down (or the server restarted) before this point: draw no line into it
    std::optional<double> kv_usage; // 0..1
    std::optional<double> kv_tokens_used;
    std::optional<double> running, waiting;
    std::optional<double> generation_tokens_per_s, prompt_tokens_per_s;
    std::optional<double> ttft_p50_ms, ttft_p99_ms;
    std::vector<RankUsage> ranks; // vLLM, ascending rank

    bool operator==(const ServerHistoryPoint&) const = default;
};

// A bounded history: every point of the last kFullResolutionS seconds, and
// older ones thinned (every other one dropped, again each time the history
// fills), so hours of samples stay within kMaxPoints. Only samples with a
// live link and data newer than the last point's are added: a sample
// re-published while the server is away adds nothing, and the time it is
// away stays a gap. A sample from another server, or from a monitor whose
// clock started again (time going backwards: a new connection), starts the
// history afresh.
class ServerHistory {
public:
    static constexpr std::size_t kMaxPoints = 4000;
    static constexpr double kFullResolutionS = 600;

    // Whether the sample added a point.
    bool add(const attach::RemoteSample& sample);
    void clear();

    const std::vector<ServerHistoryPoint>& points() const { return points_; }
    bool empty() const { return points_.empty(); }
    // The newest sample's time, added or not: while the server is away the
    // plots' time axis goes on to it.
    double lastSampleTime() const { return last_sample_s_; }
    // The ranks any point holds, ascending.
    std::vector<int> ranks() const;

private:
    bool startsAfresh(const attach::RemoteSample& sample) const;
    void thin();

    std::vector<ServerHistoryPoint> points_;
    std::string url_;
    attach::ServerKind kind_ = attach::ServerKind::Kvscope;
    double last_sample_s_ = 0;     // the newest sample's time, added or not
    std::uint64_t reconnects_ = 0; // at the newest point
    bool gap_ = false;             // the link went down since the newest point
};

} // namespace kvscope::ui
