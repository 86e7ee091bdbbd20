// engine/service: the engine thread (engine_service.h). Three locks, never
// held together: a handle's own, the inbox's (commands, the waiting count,
// drain's flags) and the published snapshot's.
#include "engine/service/engine_service.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <variant>

namespace kvscope {

namespace {

using Clock = std::chrono::steady_clock;

double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

} // namespace

std::optional<RequestOutput> RequestHandle::next(std::chrono::milliseconds timeout) {
    std::unique_lock lock(mutex_);
    ready_.wait_for(lock, timeout, [this] { return !outputs_.empty() || open_ == 0; });
    if (outputs_.empty())
        return std::nullopt;
    RequestOutput out = std::move(outputs_.front());
    outputs_.pop_front();
    return out;
}

bool RequestHandle::done() const {
    const std::lock_guard lock(mutex_);
    return open_ == 0;
}

void RequestHandle::push(RequestOutput output) {
    {
        const std::lock_guard lock(mutex_);
        if (output.finish && open_ > 0)
            --open_;
        outputs_.push_back(std::move(output));
    }
    ready_.notify_all();
}

struct EngineService::Impl {
    // What the other threads hand the engine thread, in their order.
    struct Submission {
        std::vector<TokenId> prompt;
        RequestParams params;
        std::shared_ptr<RequestHandle> handle;
        Clock::time_point submitted;
    };
    struct Cancellation {
        std::shared_ptr<RequestHandle> handle;
    };
    struct StartWorkload {
        std::vector<WorkloadRequest> requests;
        std::uint32_t n = 1;
        std::int32_t priority = 0;
    };
    struct StopWorkload {};
    using Item = std::variant<Submission, Cancellation, StartWorkload, StopWorkload>;

    // A request as the engine thread follows it, for its handle and the
    // observer.
    struct InFlight {
        std::shared_ptr<RequestHandle> handle;
        Clock::time_point submitted;
        std::vector<std::optional<Clock::time_point>> last_token; // per sample
        std::uint32_t open = 0;                                   // samples not ended
        bool first_token_seen = false;
        FinishReason reason = FinishReason::Stop; // the highest of its samples' so far
    };

    Impl(const EngineConfig& config, std::shared_ptr<const Model> model, const ServiceOptions& opts,
         ServiceObserver* obs)
        : engine(config, std::move(model)), options(opts), observer(obs) {
        engine.set_output_callback([this](const RequestOutput& out) { on_output(out); });
        publish(); // before any request, so snapshot() is never null
        thread = std::thread(&Impl::run, this);
    }

    // --- the engine thread ---

    void run() {
        if (options.on_thread_start)
            options.on_thread_start();
        while (auto items = wait_for_work()) {
            const std::size_t admitted = take(*items);
            if (workload)
                admit_arrivals();
            if (engine.has_work())
                step();
            if (workload)
                report_workload();
            if (!engine.has_work() && dirty)
                publish(); // idle: the figures are final until the next request
            report(admitted);
        }
        shut_down();
    }

    // The inbox's items once there are any, the engine has work or the
    // workload's next request is due; nullopt once drain() stops the thread.
    std::optional<std::vector<Item>> wait_for_work() {
        std::unique_lock lock(inbox_mutex);
        const auto ready = [this] { return stopping || !inbox.empty() || engine.has_work(); };
        if (const std::optional<double> wait = workload ? workload->seconds_to_next_arrival() : std::nullopt)
            inbox_cv.wait_for(lock, std::chrono::duration<double>(*wait), ready);
        else
            inbox_cv.wait(lock, ready);
        if (stopping)
            return std::nullopt;
        return std::exchange(inbox, {});
    }

    // Carries out the items in order, except that a submission cancelled in
    // the same batch ends with Abort without entering the engine. Returns
    // how many submissions it took.
    std::size_t take(std::vector<Item>& items) {
        std::set<const RequestHandle*> cancelled;
        for (const Item& item : items)
            if (const auto* c = std::get_if<Cancellation>(&item))
                cancelled.insert(c->handle.get());
        std::size_t submissions = 0;
        for (Item& item : items) {
            if (auto* s = std::get_if<Submission>(&item)) {
                ++submissions;
                if (cancelled.erase(s->handle.get()))
                    end_unstarted(follow(*s), FinishReason::Abort);
                else
                    add(*s);
            } else if (auto* w = std::get_if<StartWorkload>(&item)) {
                begin_workload(std::move(*w));
            } else if (std::holds_alternative<StopWorkload>(item)) {
                end_workload();
            }
        }
        for (const RequestHandle* handle : cancelled)
            abort(handle);
        return submissions;
    }

    void add(Submission& s) {
        InFlight f = follow(s);
        const Admission admitted = engine.add_request(std::move(s.prompt), s.params);
        if (const RequestRefusal* refused = admitted.refusal())
            end_unstarted(std::move(f), FinishReason::Error, refused->message); // submit() checked; a race-free backstop
        else
            in_flight.emplace(admitted.id(), std::move(f));
        dirty = true;
    }

    void abort(const RequestHandle* handle) {
        const auto it = std::ranges::find_if(in_flight, [&](const auto& entry) { return entry.second.handle.get() == handle; });
        if (it == in_flight.end())
            return; // it ended already
        engine.abort(it->first); // its outputs erase it
        dirty = true;
    }

    // A request that never ran: each sample ends with `reason`.
    void end_unstarted(InFlight f, FinishReason reason, const std::string& error = {}) {
        for (std::uint32_t i = 0; i < f.last_token.size(); ++i)
            deliver(f, RequestOutput{0, i, {}, {}, reason, error});
    }

    InFlight follow(const Submission& s) const {
        const std::uint32_t samples = std::max<std::uint32_t>(s.params.n, 1);
        return {s.handle, s.submitted, std::vector<std::optional<Clock::time_point>>(samples), samples};
    }

    void step() {
        engine.step();
        dirty = true;
        if (Clock::now() - last_publish >= options.snapshot_interval)
            publish();
        else if (options.record_steps && observer)
            observer->on_step(engine.snapshot());
    }

    void on_output(const RequestOutput& out) {
        if (const auto it = in_flight.find(out.request); it != in_flight.end()) {
            if (deliver(it->second, out))
                in_flight.erase(it);
        } else if (workload) {
            workload->on_output(out);
        }
    }

    // Tells the observer, then the handle (so that whoever sees the handle
    // done knows the observer has heard of it). True when the request ended.
    bool deliver(InFlight& f, const RequestOutput& out) {
        const Clock::time_point now = Clock::now();
        if (!out.tokens.empty())
            observe_tokens(f, out, now);
        if (out.finish) {
            f.reason = std::max(f.reason, *out.finish);
            if (--f.open == 0 && observer)
                observer->on_request_end(f.reason, seconds(now - f.submitted));
        }
        if (observer)
            observer->on_output(f.handle, out);
        f.handle->push(out);
        return f.open == 0;
    }

    void observe_tokens(InFlight& f, const RequestOutput& out, Clock::time_point now) {
        if (!observer || out.index >= f.last_token.size())
            return;
        if (!f.first_token_seen) {
            f.first_token_seen = true;
            observer->on_first_token(seconds(now - f.submitted));
        }
        std::optional<Clock::time_point>& last = f.last_token[out.index];
        if (last) {
            // The engine sends one token per output; were there several,
            // they would share the gap since the sample's last output.
            const double gap = seconds(now - *last) / static_cast<double>(out.tokens.size());
            for (std::size_t i = 0; i < out.tokens.size(); ++i)
                observer->on_inter_token(gap);
        }
        last = now;
    }

    // --- the workload (engine thread) ---

    void begin_workload(StartWorkload w) {
        end_workload();
        workload.emplace(engine, std::move(w.requests), w.n, w.priority);
    }

    // Stops a running workload: its requests in flight end with Abort (the
    // feeder counts them through on_output).
    void end_workload() {
        if (!workload)
            return;
        const std::size_t aborted = workload->stop();
        dirty = true; // the aborts freed blocks: the next idle snapshot shows it
        report_workload_over(aborted);
    }

    void admit_arrivals() {
        const std::size_t before = workload->submitted();
        std::vector<WorkloadRejection> refused = workload->admit_arrivals();
        refused_since_report.insert(refused_since_report.end(), std::make_move_iterator(refused.begin()),
                                    std::make_move_iterator(refused.end()));
        dirty = dirty || workload->submitted() != before;
    }

    void report_workload() {
        if (workload->done())
            return report_workload_over(0);
        if (observer)
            observer->on_workload(progress());
    }

    void report_workload_over(std::size_t aborted) {
        WorkloadProgress p = progress();
        p.over = true;
        p.aborted = aborted;
        workload.reset();
        if (observer)
            observer->on_workload(p);
    }

    WorkloadProgress progress() {
        return {workload->submitted(), workload->ended(), workload->total(), std::exchange(refused_since_report, {}),
                false, 0};
    }

    // --- publishing (engine thread) ---

    void publish() {
        std::shared_ptr<const EngineSnapshot> snap = engine.snapshot();
        if (observer)
            observer->on_snapshot(snap);
        {
            const std::lock_guard lock(snapshot_mutex);
            latest = std::move(snap);
            ++version;
        }
        snapshot_cv.notify_all();
        last_publish = Clock::now();
        dirty = false;
    }

    // What submit() and drain() need to know after this round: the
    // submissions taken are now counted in the scheduler's waiting queue
    // (or running, or ended), as are the workload's arrivals.
    void report(std::size_t admitted) {
        {
            const std::lock_guard lock(inbox_mutex);
            queued -= admitted;
            engine_waiting = engine.scheduler().num_waiting();
            idle = inbox.empty() && !engine.has_work() && !workload;
        }
        idle_cv.notify_all();
    }

    // Ends what is left: the inbox's submissions without entering the
    // engine, the workload and the engine's requests by abort; then the
    // final snapshot.
    void shut_down() {
        std::vector<Item> left;
        {
            const std::lock_guard lock(inbox_mutex);
            left = std::exchange(inbox, {});
            queued = 0;
            engine_waiting = 0;
        }
        for (const Item& item : left)
            if (const auto* s = std::get_if<Submission>(&item))
                end_unstarted(follow(*s), FinishReason::Abort);
        end_workload();
        std::vector<RequestId> ids;
        for (const auto& entry : in_flight)
            ids.push_back(entry.first);
        for (const RequestId id : ids)
            engine.abort(id);
        publish();
    }

    // --- any thread ---

    void push(Item item) {
        {
            const std::lock_guard lock(inbox_mutex);
            inbox.push_back(std::move(item));
            idle = false;
        }
        inbox_cv.notify_one();
    }

    // Why a submission may not join the inbox now; inbox_mutex held.
    std::optional<ServiceRefusal> room() const {
        if (!accepting)
            return ServiceRefusal{ServiceRefusal::Kind::Draining, std::nullopt, "the engine is shutting down"};
        if (queued + engine_waiting >= options.max_waiting)
            return ServiceRefusal{ServiceRefusal::Kind::Busy, std::nullopt,
                                  std::to_string(queued + engine_waiting) +
                                      " requests are waiting for the engine, its limit (max_waiting = " +
                                      std::to_string(options.max_waiting) + "); retry later"};
        return std::nullopt;
    }

    // The engine thread's alone, except that model(), tokenizer(), config()
    // and refusal() read it from any thread: the Engine fixes what they read
    // at construction and nothing changes it after (the Tokenizer's methods
    // are const and keep no cache).
    Engine engine;
    const ServiceOptions options;
    ServiceObserver* const observer;

    // Engine thread only.
    std::map<RequestId, InFlight> in_flight;
    std::optional<WorkloadFeeder> workload;
    std::vector<WorkloadRejection> refused_since_report;
    Clock::time_point last_publish;
    bool dirty = false; // the engine changed since the last snapshot

    // Guarded by inbox_mutex.
    std::mutex inbox_mutex;
    std::condition_variable inbox_cv; // wakes the engine thread
    std::condition_variable idle_cv;  // wakes drain()
    std::vector<Item> inbox;
    std::size_t queued = 0;         // submissions the engine has not yet counted in engine_waiting
    std::size_t engine_waiting = 0; // sequences in the scheduler's waiting queue
    bool accepting = true;
    bool stopping = false;
    bool idle = true; // nothing in the inbox, nothing in the engine, no workload

    // Guarded by snapshot_mutex.
    mutable std::mutex snapshot_mutex;
    mutable std::condition_variable snapshot_cv;
    std::shared_ptr<const EngineSnapshot> latest;
    std::uint64_t version = 0;

    std::mutex drain_mutex; // one drain() at a time, held until the thread is joined
    std::thread thread;     // last: it starts once everything above exists
};

EngineService::EngineService(const EngineConfig& config, std::shared_ptr<const Model> model,
                             const ServiceOptions& options, ServiceObserver* observer)
    : impl_(std::make_unique<Impl>(config, std::move(model), options, observer)) {}

EngineService::~EngineService() { drain(std::chrono::milliseconds(0)); }

Submitted EngineService::submit(std::vector<TokenId> prompt, const RequestParams& params) {
    if (std::optional<RequestRefusal> refused = impl_->engine.refusal(prompt, params)) {
        std::string message = refused->message;
        return {nullptr, ServiceRefusal{ServiceRefusal::Kind::Engine, std::move(refused), std::move(message)}};
    }
    auto handle = std::make_shared<RequestHandle>(std::max<std::uint32_t>(params.n, 1), params.client_tag);
    Impl::Submission s{std::move(prompt), params, handle, Clock::now()};
    {
        const std::lock_guard lock(impl_->inbox_mutex);
        if (std::optional<ServiceRefusal> refused = impl_->room())
            return {nullptr, std::move(refused)};
        impl_->inbox.emplace_back(std::move(s));
        ++impl_->queued;
        impl_->idle = false;
    }
    impl_->inbox_cv.notify_one();
    return {std::move(handle), std::nullopt};
}

void EngineService::cancel(const std::shared_ptr<RequestHandle>& handle) {
    if (handle && !handle->done())
        impl_->push(Impl::Cancellation{handle});
}

void EngineService::start_workload(std::vector<WorkloadRequest> requests, std::uint32_t n, std::int32_t priority) {
    impl_->push(Impl::StartWorkload{std::move(requests), n, priority});
}

void EngineService::stop_workload() { impl_->push(Impl::StopWorkload{}); }

std::shared_ptr<const EngineSnapshot> EngineService::snapshot() const {
    const std::lock_guard lock(impl_->snapshot_mutex);
    return impl_->latest;
}

std::uint64_t EngineService::snapshot_version() const {
    const std::lock_guard lock(impl_->snapshot_mutex);
    return impl_->version;
}

std::shared_ptr<const EngineSnapshot> EngineService::wait_snapshot(std::uint64_t after,
                                                                   std::chrono::milliseconds timeout) const {
    std::unique_lock lock(impl_->snapshot_mutex);
    impl_->snapshot_cv.wait_for(lock, timeout, [&] { return impl_->version > after; });
    return impl_->latest;
}

void EngineService::drain(std::chrono::milliseconds grace) {
    const std::lock_guard once(impl_->drain_mutex);
    if (!impl_->thread.joinable())
        return;
    {
        std::unique_lock lock(impl_->inbox_mutex);
        impl_->accepting = false;
        impl_->idle_cv.wait_for(lock, grace, [&] { return impl_->idle; });
        impl_->stopping = true;
    }
    impl_->inbox_cv.notify_one();
    impl_->thread.join();
}

const Model& EngineService::model() const { return impl_->engine.model(); }

const Tokenizer& EngineService::tokenizer() const { return impl_->engine.tokenizer(); }

const EngineConfig& EngineService::config() const { return impl_->engine.config(); }

int EngineService::threads() const { return impl_->engine.threads(); }

} // namespace kvscope
