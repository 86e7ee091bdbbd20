// net/serve: the Engine on its own thread, for a server whose HTTP worker
// threads come and go. The engine thread owns the Engine (it is
// single-threaded, engine/engine.h); other threads only hand it requests
// and aborts through a queue, and read what it publishes: each request's
// outputs through its RequestHandle, and immutable EngineSnapshots.
//
//   HTTP worker --submit()--> [inbox] --> engine thread: add_request, step()
//   HTTP worker <--next()---- [handle] <-- output callback
//   /metrics, /kv/* <--snapshot()------- published after steps (at most every
//                                        snapshot_interval) and when idle
//
// Depends on engine/ only: no HTTP, no JSON.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "engine/engine.h"

namespace kvscope::serve {

// What the engine thread tells whoever keeps the server's metrics, as it
// happens (called on the engine thread, and for the first snapshot in the
// service's constructor; keep it short). Times in seconds, measured from
// submit(): what a client waits, queueing included. A request's end comes
// before its handle's last output, so whoever saw a handle done() knows the
// observer heard of it.
class ServiceObserver {
public:
    virtual ~ServiceObserver() = default;
    virtual void on_first_token(double ttft_s) = 0;  // once per request
    virtual void on_inter_token(double gap_s) = 0;   // per later token of each sample
    // Once per request, with its samples' highest reason in FinishReason's
    // order (Error, else Abort, else Length if any sample was cut, else
    // Stop); a request cancelled before it reached the engine ends too.
    virtual void on_request_end(FinishReason reason, double e2e_s) = 0;
    virtual void on_snapshot(const EngineSnapshot& snapshot) = 0;      // each published snapshot
};

// One submitted request as its submitter sees it: its outputs in order.
// Thread-safe; shared by the submitter and the engine thread.
class RequestHandle {
public:
    explicit RequestHandle(std::uint32_t samples) : open_(samples) {}

    // The next output, waiting up to `timeout`; nullopt on timeout or once
    // done() and every output was taken.
    std::optional<RequestOutput> next(std::chrono::milliseconds timeout);
    // Every sample has ended (its finishing output may still be unread).
    bool done() const;

    // The engine thread's side.
    void push(RequestOutput output);

private:
    mutable std::mutex mutex_;
    std::condition_variable ready_;
    std::deque<RequestOutput> outputs_;
    std::uint32_t open_; // samples without their finishing output
};

struct ServiceOptions {
    // submit() refuses (503) while this many requests wait for the engine
    // (queued here or waiting in its scheduler).
    std::uint32_t max_waiting = 1024;
    // While busy, a snapshot at most this often (snapshots cost a pass over
    // the pool); one more whenever the engine goes idle, so an idle server's
    // figures are exact.
    double snapshot_interval_s = 0.1;
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

    // Queues a request; any thread. Throws ApiError 503 when max_waiting
    // requests wait or the service is draining. A request the engine
    // refuses (prompt + max_new_tokens past the context, larger than the
    // pool) ends with FinishReason::Error and the engine's message.
    std::shared_ptr<RequestHandle> submit(std::vector<TokenId> prompt, const RequestParams& params);
    // The submitter gave up (client disconnected): the engine aborts the
    // request at its next step and its blocks return to the pool; its handle
    // ends with FinishReason::Abort. Any thread; idempotent; a finished
    // request is left alone.
    void cancel(const std::shared_ptr<RequestHandle>& handle);

    // The last published snapshot and its number (1, 2, ...); any thread.
    std::shared_ptr<const EngineSnapshot> snapshot() const;
    std::uint64_t snapshot_version() const;
    // Waits up to `timeout` for a snapshot newer than version `after`;
    // returns the latest either way (for /kv/stream). An idle engine and a
    // drained service publish none: the wait then lasts the whole timeout.
    std::shared_ptr<const EngineSnapshot> wait_snapshot(std::uint64_t after, std::chrono::milliseconds timeout) const;

    // Stops taking requests (submit() answers 503), lets those in flight run
    // for up to `grace`, aborts what is left and stops the engine thread.
    // Returns when it has stopped; every handle is then done().
    void drain(std::chrono::milliseconds grace);

    // Fixed at construction; safe from any thread.
    const Model& model() const;
    const Tokenizer& tokenizer() const;
    const EngineConfig& config() const;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

} // namespace kvscope::serve
