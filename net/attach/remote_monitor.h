// net/attach: watching one server. A RemoteMonitor owns the threads that
// talk to it (an HTTP poller, for kvscope also the /kv/stream reader, for
// vLLM one KV-events subscriber per rank) and publishes a RemoteSample after
// every poll. Nothing here blocks its caller: the constructor returns at
// once, latest() is a pointer copy, the destructor stops the threads
// within about a second whatever the server does.
//
// A server that goes away, answers slowly or answers garbage never ends the
// monitor: the sample's `link` turns Reconnecting, the fault is added to
// `faults`, and polling resumes with backoff (0.5 s doubling to 8 s) while
// the last figures stay in the sample. A restarted server (counters that
// fall) resets the rates, and says so.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "net/attach/connect_options.h"
#include "net/attach/remote_sample.h"
#include "engine/core/error.h"

namespace kvscope::attach {

class RemoteMonitor {
public:
    using OnSample = std::function<void(std::shared_ptr<const RemoteSample>)>;

    // Starts watching at once; throws ConnectOptionsError where validate()
    // does. on_sample (optional) runs on one of the monitor's threads after
    // every poll (for kvscope also after every /kv/stream snapshot, up to
    // 10 a second), with the new sample, one call at a time: keep it short.
    //
    // Until the kind is known (link Connecting, options.kind nullopt) the
    // sample's kind says kvscope; trust it once the link has been Live.
    explicit RemoteMonitor(ConnectOptions options, OnSample on_sample = {});
    ~RemoteMonitor();
    RemoteMonitor(const RemoteMonitor&) = delete;
    RemoteMonitor& operator=(const RemoteMonitor&) = delete;

    const ConnectOptions& options() const;
    // The newest sample: never null (before the first poll it says Connecting).
    std::shared_ptr<const RemoteSample> latest() const;
    // Waits until a sample newer than the one numbered `seen` is out (or
    // `timeout` passes) and returns the newest; `seen` becomes its number.
    std::shared_ptr<const RemoteSample> wait_next(std::uint64_t& seen, std::chrono::milliseconds timeout) const;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

} // namespace kvscope::attach
