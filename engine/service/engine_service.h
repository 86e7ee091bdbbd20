// engine/service: the Engine on its own thread: the one bridge every front
// end uses (the server's HTTP workers, the app's Qt adapter). The engine
// thread owns the Engine (it is single-threaded, engine/engine.h); other
// threads only hand it commands through an inbox, and read what it
// publishes: each request's outputs through its RequestHandle, immutable
// EngineSnapshots, and what the ServiceObserver hears.
//
//   submitter --submit()------> [inbox] --> engine thread: add_request, step()
//   submitter <--next()-------- [handle] <-- output callback (observer first)
//   app       --start_workload()--> [inbox]     (the feeder paces it there)
//   readers   <--snapshot()------------------- published after steps (at most
//                                              every snapshot_interval) and when idle
//
// Qt-free and HTTP-free: a refusal is a value (ServiceRefusal: the
// engine's typed RequestRefusal, or the service's own), mapped to an HTTP
// status by net/serve and to words by the app.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "engine/workload/workload.h"
#include "engine/workload/workload_feeder.h"

namespace kvscope {

// One submitted request as its submitter sees it: its outputs in order.
// Thread-safe; shared by the submitter and the engine thread.
class RequestHandle {
public:
    RequestHandle(std::uint32_t samples, std::uint64_t client_tag) : open_(samples), client_tag_(client_tag) {}

    // The next output, waiting up to `timeout`; nullopt on timeout or once
    // done() and every output was taken.
    std::optional<RequestOutput> next(std::chrono::milliseconds timeout);
    // Every sample has ended (its finishing output may still be unread).
    bool done() const;
    // Its RequestParams::client_tag, as submitted.
    std::uint64_t client_tag() const { return client_tag_; }

    // The engine thread's side.
    void push(RequestOutput output);

private:
    mutable std::mutex mutex_;
    std::condition_variable ready_;
    std::deque<RequestOutput> outputs_;
    std::uint32_t open_; // samples without their finishing output
    const std::uint64_t client_tag_;
};

// A running workload, as the feeder counts it (engine/workload/workload_feeder.h).
struct WorkloadProgress {
    std::size_t submitted = 0;
    std::size_t ended = 0;
    std::size_t total = 0;
    std::vector<WorkloadRejection> refused; // since the last report
    bool over = false;                      // it ran to its end or was stopped
    std::size_t aborted = 0;                // with `over`: requests the stop aborted
};

// What the engine thread tells whoever listens, as it happens: on the
// engine thread (and for the first snapshot in the service's constructor),
// so keep it short. Times in seconds, measured from submit(): what a
// client waits, queueing included. A request's end comes before its
// handle's last output, so whoever saw a handle done() knows the observer
// heard of it. Every method has an empty default: listen to what you need.
class ServiceObserver {
public:
    virtual ~ServiceObserver() = default;
    virtual void on_first_token(double /*ttft_s*/) {} // once per request
    virtual void on_inter_token(double /*gap_s*/) {}  // per later token of each sample
    // Once per request, with its samples' highest reason in FinishReason's
    // order (Error, else Abort, else Length if any sample was cut, else
    // Stop); a request cancelled before it reached the engine ends too.
    virtual void on_request_end(FinishReason /*reason*/, double /*e2e_s*/) {}
    // Each output of a submitted request, just before its handle gets it.
    virtual void on_output(const std::shared_ptr<RequestHandle>& /*handle*/, const RequestOutput& /*out*/) {}
    // Each published snapshot.
    virtual void on_snapshot(const std::shared_ptr<const EngineSnapshot>& /*snapshot*/) {}
    // With ServiceOptions::record_steps: the snapshot of each step that was
    // not published, so a replay can show steps faster than the publish rate.
    virtual void on_step(const std::shared_ptr<const EngineSnapshot>& /*snapshot*/) {}
    // After each round while a workload runs, and once when it is over.
    virtual void on_workload(const WorkloadProgress& /*progress*/) {}
};

// Why submit() took no request.
struct ServiceRefusal {
    enum class Kind : std::uint8_t {
        Engine,   // the request can never run: `engine` says why
        Busy,     // max_waiting requests wait already: retry later
        Draining, // the service is shutting down
    };
    Kind kind = Kind::Engine;
    std::optional<RequestRefusal> engine;
    std::string message;
};

// What submit() answers: the request's handle, or why there is none.
struct Submitted {
    std::shared_ptr<RequestHandle> handle; // null when refused
    std::optional<ServiceRefusal> refusal;
};

struct ServiceOptions {
    // submit() refuses (Busy) while this many requests wait for the engine
    // (queued here or waiting in its scheduler).
    std::uint32_t max_waiting = 1024;
    // While busy, a snapshot at most this often (snapshots cost a pass over
    // the pool); one more whenever the engine goes idle, so an idle
    // engine's figures are exact.
    std::chrono::milliseconds snapshot_interval{100};
    // Take a snapshot of every step not published (ServiceObserver::on_step).
    bool record_steps = false;
    // Runs first on the engine thread (the app lowers its priority there).
    std::function<void()> on_thread_start;
};

class EngineService {
public:
    // Builds the Engine (throws kvscope::Error as Engine's constructor does)
    // and starts the engine thread. `observer` may be null and must outlive
    // the service.
    EngineService(const EngineConfig& config, std::shared_ptr<const Model> model,
                  const ServiceOptions& options = {}, ServiceObserver* observer = nullptr);
    // Aborts what is in flight (their handles end with FinishReason::Abort)
    // and joins the engine thread.
    ~EngineService();
    EngineService(const EngineService&) = delete;
    EngineService& operator=(const EngineService&) = delete;

    // Queues a request; any thread. Refuses it, queueing nothing, when the
    // engine would (Engine::refusal: empty prompt, past the context, larger
    // than the pool, bad parameters), when max_waiting requests wait, or
    // while the service drains.
    Submitted submit(std::vector<TokenId> prompt, const RequestParams& params);
    // The submitter gave up (a client disconnected, a chat was stopped):
    // the engine aborts the request at its next round and its blocks return
    // to the pool; its handle ends with FinishReason::Abort. Any thread;
    // idempotent; a finished request is left alone.
    void cancel(const std::shared_ptr<RequestHandle>& handle);

    // Replaces the running workload (if any) with `requests`, each added at
    // its arrival time (seconds from now) as request_params() says, with
    // `priority`; their ends are counted, not handed out. Stopping aborts
    // those in flight. Any thread.
    void start_workload(std::vector<WorkloadRequest> requests, std::uint32_t n, std::int32_t priority);
    void stop_workload();

    // The last published snapshot and its number (1, 2, ...); any thread.
    std::shared_ptr<const EngineSnapshot> snapshot() const;
    std::uint64_t snapshot_version() const;
    // Waits up to `timeout` for a snapshot newer than version `after`;
    // returns the latest either way (for /kv/stream). An idle engine and a
    // drained service publish none: the wait then lasts the whole timeout.
    std::shared_ptr<const EngineSnapshot> wait_snapshot(std::uint64_t after, std::chrono::milliseconds timeout) const;

    // Stops taking requests (submit() refuses: Draining), lets those in
    // flight run for up to `grace`, aborts what is left and stops the engine
    // thread. Returns when it has stopped; every handle is then done().
    void drain(std::chrono::milliseconds grace);

    // Fixed at construction; safe from any thread.
    const Model& model() const;
    const Tokenizer& tokenizer() const;
    const EngineConfig& config() const;
    int threads() const; // the engine's kernel threads (config().threads resolved)

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

} // namespace kvscope
