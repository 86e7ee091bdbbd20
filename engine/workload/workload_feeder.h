#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "engine/workload/workload.h"

namespace kvscope {

// How a workload request is sent: asking for its max_new_tokens, its reply
// ending after output_len tokens (end_after_tokens), the model's own EOS
// ignored, as serving benchmarks do; n samples.
RequestParams request_params(const WorkloadRequest& w, std::uint32_t n);

// A workload request the engine refused as it was added, with the
// engine's reason.
struct WorkloadRejection {
    std::size_t index = 0; // in the workload
    std::string error;
};

// Paces a workload into an Engine: each request is added once its arrival
// time (seconds since the feeder was made) has come, as request_params
// says, and counted when it ends. `bench serve`, the app's load generator
// and anything else that replays a workload share this one feeder.
//
// The engine has one output callback and its owner keeps it: the owner
// hands every output to on_output, which says whether it was the
// feeder's. The engine must outlive the feeder; the feeder is not
// thread-safe (call it from the engine's thread, like the engine).
class WorkloadFeeder {
public:
    using Clock = std::chrono::steady_clock;

    // `priority`: each request's RequestParams::priority (the app sends its
    // workloads behind chat turns; FCFS engines ignore it).
    WorkloadFeeder(Engine& engine, std::vector<WorkloadRequest> requests, std::uint32_t n = 1,
                   std::int32_t priority = 0);

    // Adds every request whose arrival time has come and returns the ones
    // the engine refused (they count as ended and failed). Adds nothing
    // once stopped.
    std::vector<WorkloadRejection> admit_arrivals();
    // Counts the end of a request this feeder added; true when `out` was
    // one of its requests' outputs.
    bool on_output(const RequestOutput& out);
    // Adds no more requests and aborts those added and not ended (their
    // ends arrive through on_output as FinishReason::Abort). Returns how
    // many it aborted.
    std::size_t stop();

    std::size_t total() const { return requests_.size(); }
    std::size_t submitted() const { return next_; }
    std::size_t ended() const { return completed_ + failed_ + aborted_; }
    std::size_t completed() const { return completed_; } // by length or stop
    std::size_t failed() const { return failed_; }       // with an error, refusals included
    bool all_submitted() const { return next_ == requests_.size() || stopped_; }
    // Every request added and ended (or the feeder stopped and its aborts arrived).
    bool done() const { return all_submitted() && open_.empty(); }
    // How long until the next request arrives (0 when it is due); nullopt
    // when none is left to add.
    std::optional<double> seconds_to_next_arrival() const;

private:
    double elapsed_s() const;
    void count_end(FinishReason reason);

    Engine& engine_;
    std::vector<WorkloadRequest> requests_;
    std::uint32_t n_;
    std::int32_t priority_;
    Clock::time_point start_ = Clock::now();
    std::size_t next_ = 0;
    std::set<RequestId> open_; // added, not ended
    std::size_t completed_ = 0, failed_ = 0, aborted_ = 0;
    bool stopped_ = false;
};

} // namespace kvscope
