// net/serve: the engine thread (engine_service.h). Three locks, never held
// together: a handle's own, the inbox's (submissions, cancellations, the
// waiting count, drain's flags) and the published snapshot's.
#include "net/serve/engine_service.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <variant>

#include "net/serve/api_error.h"

namespace kvscope::serve {

namespace {

using Clock = std::chrono::steady_clock;

double seconds(Clock::duration d) {
    return std::chrono::duration<double>(d).count();
}

// How many finishing outputs the engine sends for a request: one per sample,
// except one alone (index 0) for an n it refuses as out of range (engine.h).
std::uint32_t outputs_expected(const RequestParams& params) {
    return params.n == 0 || params.n > kMaxSamplesPerRequest ? 1 : params.n;
}

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
    // What submit() and cancel() hand the engine thread, in their order.
    struct Submission {
        std::vector<TokenId> prompt;
        RequestParams params;
        std::shared_ptr<RequestHandle> handle;
        Clock::time_point submitted;
    };
    struct Cancellation {
        std::shared_ptr<RequestHandle> handle;
    };
    using Item = std::variant<Submission, Cancellation>;

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
        while (auto items = wait_for_work()) {
            const std::size_t admitted = admit(*items);
            if (engine.has_work())
                step();
            if (!engine.has_work() && dirty)
                publish(); // idle: the figures are final until the next request
            report(admitted);
        }
        shut_down();
    }

    // The inbox's items once there are any or the engine has work; nullopt
    // once drain() stops the thread.
    std::optional<std::vector<Item>> wait_for_work() {
        std::unique_lock lock(inbox_mutex);
        inbox_cv.wait(lock, [this] { return stopping || !inbox.empty() || engine.has_work(); });
        if (stopping)
            return std::nullopt;
        return std::exchange(inbox, {});
    }

    // Adds the submissions, except those already cancelled (they end with
    // Abort without entering the engine), then aborts the cancelled ones
    // that had entered. Returns how many submissions it took.
    std::size_t admit(std::vector<Item>& items) {
        std::set<const RequestHandle*> cancelled;
        for (const Item& item : items)
            if (const auto* c = std::get_if<Cancellation>(&item))
                cancelled.insert(c->handle.get());
        std::size_t submissions = 0;
        for (Item& item : items) {
            auto* s = std::get_if<Submission>(&item);
            if (!s)
                continue;
            ++submissions;
            if (cancelled.erase(s->handle.get()))
                end_unstarted(follow(*s), FinishReason::Abort);
            else
                add(*s);
        }
        for (const RequestHandle* handle : cancelled)
            abort(handle);
        return submissions;
    }

    void add(Submission& s) {
        InFlight f = follow(s);
        const Admission admitted = engine.add_request(std::move(s.prompt), s.params);
        if (const RequestRefusal* refused = admitted.refusal())
            end_unstarted(std::move(f), FinishReason::Error, refused->message);
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

    // A request that never ran (cancelled before it reached the engine, or
    // refused by it): each sample ends with `reason`.
    void end_unstarted(InFlight f, FinishReason reason, const std::string& error = {}) {
        for (std::uint32_t i = 0; i < f.last_token.size(); ++i)
            deliver(f, RequestOutput{0, i, {}, {}, reason, error});
    }

    InFlight follow(const Submission& s) const {
        const std::uint32_t samples = outputs_expected(s.params);
        return {s.handle, s.submitted, std::vector<std::optional<Clock::time_point>>(samples), samples};
    }

    void step() {
        engine.step();
        dirty = true;
        if (seconds(Clock::now() - last_publish) >= options.snapshot_interval_s)
            publish();
    }

    void on_output(const RequestOutput& out) {
        if (const auto it = in_flight.find(out.request); it != in_flight.end())
            if (deliver(it->second, out))
                in_flight.erase(it);
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

    void publish() {
        std::shared_ptr<const EngineSnapshot> snap = engine.snapshot();
        if (observer)
            observer->on_snapshot(*snap);
        {
            const std::lock_guard lock(snapshot_mutex);
            latest = std::move(snap);
            ++version;
        }
        snapshot_cv.notify_all();
        last_publish = Clock::now();
        dirty = false;
    }

    // What submit() and drain() need to know after this round.
    void report(std::size_t admitted) {
        {
            const std::lock_guard lock(inbox_mutex);
            queued -= admitted;
            engine_waiting = engine.scheduler().num_waiting();
            idle = inbox.empty() && !engine.has_work();
        }
        idle_cv.notify_all();
    }

    // Ends what is left: the inbox's submissions without entering the
    // engine, the engine's requests by abort; then the final snapshot.
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

    // Throws ApiError 503 unless a submission may join the inbox now;
    // inbox_mutex held.
    void check_room() const {
        if (!accepting)
            throw ApiError::overloaded("the server is shutting down");
        if (queued + engine_waiting >= options.max_waiting)
            throw ApiError::overloaded(std::to_string(queued + engine_waiting) +
                                       " requests are waiting for the engine, the server's limit (--max-waiting " +
                                       std::to_string(options.max_waiting) + "); retry later");
    }

    // The engine thread's alone, except that model(), tokenizer() and
    // config() read it from any thread: the Engine fixes those three at
    // construction and nothing changes them after (the Tokenizer's methods
    // are const and keep no cache).
    Engine engine;
    const ServiceOptions options;
    ServiceObserver* const observer;

    // Engine thread only.
    std::map<RequestId, InFlight> in_flight;
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
    bool idle = true; // nothing in the inbox, nothing in the engine

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

EngineService::~EngineService() {
    drain(std::chrono::milliseconds(0));
}

std::shared_ptr<RequestHandle> EngineService::submit(std::vector<TokenId> prompt, const RequestParams& params) {
    auto handle = std::make_shared<RequestHandle>(outputs_expected(params));
    Impl::Submission s{std::move(prompt), params, handle, Clock::now()};
    {
        const std::lock_guard lock(impl_->inbox_mutex);
        impl_->check_room();
        impl_->inbox.emplace_back(std::move(s));
        ++impl_->queued;
        impl_->idle = false;
    }
    impl_->inbox_cv.notify_one();
    return handle;
}

void EngineService::cancel(const std::shared_ptr<RequestHandle>& handle) {
    if (handle && !handle->done())
        impl_->push(Impl::Cancellation{handle});
}

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

const Model& EngineService::model() const {
    return impl_->engine.model();
}

const Tokenizer& EngineService::tokenizer() const {
    return impl_->engine.tokenizer();
}

const EngineConfig& EngineService::config() const {
    return impl_->engine.config();
}

} // namespace kvscope::serve
