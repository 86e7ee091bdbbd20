// The engine on its own thread (net/serve/engine_service.h), on stories260K:
// a submitted request streams what run_to_completion gives; many submitters
// at once each get their own outputs; cancelling, the context limit,
// max_waiting, drain and the destructor end every handle; the observer
// hears once of each request's first token and end. To act while a request
// is provably mid-generation, a test holds the engine thread inside the
// observer's first on_first_token (Gate) instead of racing it.
#include <QtTest>

#include <algorithm>
#include <future>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "net/serve/api_error.h"
#include "net/serve/engine_service.h"
#include "engine/completion.h"
#include "support/test_models.h"

using namespace kvscope;
using namespace kvscope::serve;
using namespace std::chrono_literals;

namespace {

// Long enough for any of these tests; a hang shows as a failure, not a
// stuck ctest. Never a timing assertion.
constexpr auto kPatience = 120s;

EngineConfig service_config() {
    EngineConfig c;
    c.kv_dtype = KvDtype::F32;
    c.block_size = 16;
    c.num_blocks = 256;
    c.watermark = 0.0;
    return c;
}

RequestParams greedy(std::uint32_t tokens) {
    RequestParams p;
    p.max_new_tokens = tokens;
    p.ignore_eos = true; // a fixed length, whatever the model says
    return p;
}

struct Collected {
    std::vector<TokenId> tokens;
    std::string text;
    std::optional<FinishReason> finish;
    std::string error;
};

// Every output of a handle until it is done, by sample index.
std::map<std::uint32_t, Collected> collect(RequestHandle& handle) {
    std::map<std::uint32_t, Collected> got;
    const auto add = [&](const RequestOutput& o) {
        Collected& c = got[o.index];
        c.tokens.insert(c.tokens.end(), o.tokens.begin(), o.tokens.end());
        c.text += o.text;
        if (o.finish) {
            c.finish = o.finish;
            c.error = o.error;
        }
    };
    const auto deadline = std::chrono::steady_clock::now() + kPatience;
    while (std::chrono::steady_clock::now() < deadline) {
        if (auto out = handle.next(100ms)) {
            add(*out);
        } else if (handle.done()) {
            while (auto rest = handle.next(0ms))
                add(*rest);
            break;
        }
    }
    return got;
}

// Counts what the service reports. Armed, it holds the engine thread inside
// the next on_first_token until release().
class TestObserver : public ServiceObserver {
public:
    void on_first_token(double) override {
        std::unique_lock lock(mutex_);
        ++first_tokens_;
        if (gate_ != Gate::Armed)
            return;
        gate_ = Gate::Holding;
        changed_.notify_all();
        changed_.wait(lock, [this] { return gate_ == Gate::Open; });
    }
    void on_inter_token(double) override {
        const std::lock_guard lock(mutex_);
        ++inter_tokens_;
    }
    void on_request_end(FinishReason reason, double) override {
        const std::lock_guard lock(mutex_);
        ends_.push_back(reason);
    }
    void on_snapshot(const EngineSnapshot& s) override {
        const std::lock_guard lock(mutex_);
        steps_.push_back(s.step);
    }

    void arm() {
        const std::lock_guard lock(mutex_);
        gate_ = Gate::Armed;
    }
    // True once the engine thread is held.
    bool wait_held() {
        std::unique_lock lock(mutex_);
        return changed_.wait_for(lock, kPatience, [this] { return gate_ == Gate::Holding; });
    }
    void release() {
        {
            const std::lock_guard lock(mutex_);
            gate_ = Gate::Open;
        }
        changed_.notify_all();
    }

    std::size_t first_tokens() const { return locked(first_tokens_); }
    std::size_t inter_tokens() const { return locked(inter_tokens_); }
    std::vector<FinishReason> ends() const { return locked(ends_); }
    std::vector<std::uint64_t> steps() const { return locked(steps_); }

private:
    enum class Gate { Open, Armed, Holding };
    template <class T>
    T locked(const T& value) const {
        const std::lock_guard lock(mutex_);
        return value;
    }

    mutable std::mutex mutex_;
    std::condition_variable changed_;
    Gate gate_ = Gate::Open;
    std::size_t first_tokens_ = 0, inter_tokens_ = 0;
    std::vector<FinishReason> ends_;
    std::vector<std::uint64_t> steps_;
};

// A service whose engine thread holds at its first token (TestObserver's
// gate) until the test releases it; a failing test releases it too, before
// the service's destructor joins the thread.
struct HeldService {
    HeldService(std::shared_ptr<const Model> model, const ServiceOptions& options = {})
        : service(service_config(), std::move(model), options, &observer) {
        observer.arm();
    }
    ~HeldService() { observer.release(); }

    TestObserver observer;
    EngineService service;
};

// The latest snapshot once `ready` holds for it; null after kPatience.
template <class Ready>
std::shared_ptr<const EngineSnapshot> snapshot_when(const EngineService& service, Ready ready) {
    const auto deadline = std::chrono::steady_clock::now() + kPatience;
    while (std::chrono::steady_clock::now() < deadline) {
        const std::uint64_t version = service.snapshot_version();
        if (auto snap = service.snapshot(); ready(*snap))
            return snap;
        service.wait_snapshot(version, 1s);
    }
    return nullptr;
}

} // namespace

class TestEngineService : public QObject {
    Q_OBJECT

private slots:
    void initTestCase();
    void greedy_output_equals_run_to_completion();
    void concurrent_submitters_get_their_own_outputs();
    void cancel_ends_with_abort_and_frees_the_blocks();
    void a_request_past_the_context_ends_with_the_engines_error();
    void max_waiting_refuses_with_503();
    void drain_aborts_what_runs();
    void destructor_while_busy_returns();
    void observer_hears_each_request_once();
    void wait_snapshot_times_out_when_idle();

private:
    std::vector<TokenId> prompt(const std::string& text) const;
    Completion reference(const std::vector<TokenId>& prompt, std::uint32_t tokens) const;

    std::shared_ptr<const Model> model_;
};

void TestEngineService::initTestCase() {
    KVSCOPE_REQUIRE_MODEL(path, "stories260K-f32.gguf");
    model_ = std::make_shared<const Model>(path.toStdString());
}

std::vector<TokenId> TestEngineService::prompt(const std::string& text) const {
    return Engine(service_config(), model_).tokenizer().encode(text);
}

// What the request gives alone on an engine of its own.
Completion TestEngineService::reference(const std::vector<TokenId>& p, std::uint32_t tokens) const {
    Engine engine(config_for_one_request(service_config(), p.size() + tokens), model_);
    return run_to_completion(engine, p, greedy(tokens));
}

void TestEngineService::greedy_output_equals_run_to_completion() {
    const std::vector<TokenId> p = prompt("Once upon a time, there was a little girl");
    const Completion want = reference(p, 48);
    EngineService service(service_config(), model_);
    auto handle = service.submit(p, greedy(48));
    auto got = collect(*handle);
    QVERIFY(handle->done());
    QCOMPARE(got.size(), std::size_t(1));
    QCOMPARE(got[0].finish, std::optional(FinishReason::Length));
    QCOMPARE(got[0].tokens, want.tokens);
    QCOMPARE(got[0].text, want.text);
}

void TestEngineService::concurrent_submitters_get_their_own_outputs() {
    const std::vector<std::string> texts = {"Once upon a time", "The cat sat", "Lily wanted a", "One day, a big",
                                            "Tom and Sue", "The sun was", "A little bird", "Mom said"};
    constexpr std::uint32_t kTokens = 24;
    constexpr std::size_t kThreads = 8, kPerThread = 8;
    std::vector<std::vector<TokenId>> prompts;
    std::vector<Completion> want;
    for (const std::string& t : texts) {
        prompts.push_back(prompt(t));
        want.push_back(reference(prompts.back(), kTokens));
    }
    struct Result {
        std::size_t prompt = 0;
        Collected got;
    };
    std::vector<Result> results(kThreads * kPerThread);
    {
        EngineService service(service_config(), model_);
        std::vector<std::thread> threads;
        for (std::size_t t = 0; t < kThreads; ++t) {
            threads.emplace_back([&, t] {
                std::vector<std::shared_ptr<RequestHandle>> handles;
                for (std::size_t i = 0; i < kPerThread; ++i) {
                    results[t * kPerThread + i].prompt = (t + i) % prompts.size();
                    handles.push_back(service.submit(prompts[(t + i) % prompts.size()], greedy(kTokens)));
                }
                for (std::size_t i = 0; i < kPerThread; ++i)
                    results[t * kPerThread + i].got = collect(*handles[i])[0];
            });
        }
        for (std::thread& t : threads)
            t.join();
    }
    for (std::size_t i = 0; i < results.size(); ++i) {
        const Result& r = results[i];
        QVERIFY2(r.got.finish == FinishReason::Length, qPrintable(QStringLiteral("request %1").arg(i)));
        QVERIFY2(r.got.tokens == want[r.prompt].tokens, qPrintable(QStringLiteral("request %1").arg(i)));
        QVERIFY2(r.got.text == want[r.prompt].text, qPrintable(QStringLiteral("request %1").arg(i)));
    }
}

void TestEngineService::cancel_ends_with_abort_and_frees_the_blocks() {
    HeldService held(model_);
    TestObserver& observer = held.observer;
    EngineService& service = held.service;
    const std::vector<TokenId> p = prompt("Once upon a time");
    auto running = service.submit(p, greedy(400));
    QVERIFY(observer.wait_held()); // mid-step, its first token sampled
    // Cancelled while the engine thread is held: it never reaches the engine.
    auto queued = service.submit(p, greedy(400));
    service.cancel(queued);
    service.cancel(running);
    service.cancel(running); // idempotent
    observer.release();

    auto got = collect(*running);
    QCOMPARE(got[0].finish, std::optional(FinishReason::Abort));
    QVERIFY(got[0].tokens.size() < 400);
    auto never = collect(*queued);
    QCOMPARE(never[0].finish, std::optional(FinishReason::Abort));
    QVERIFY(never[0].tokens.empty());
    service.cancel(running); // finished: left alone

    const auto idle = snapshot_when(service, [](const EngineSnapshot& s) { return s.completed_requests == 1; });
    QVERIFY(idle);
    QCOMPARE(idle->running, std::size_t(0));
    QCOMPARE(idle->waiting, std::size_t(0));
    QVERIFY(idle->seqs.empty());
    QVERIFY(idle->pool->sequences.empty());
    for (const BlockInfo& b : idle->pool->blocks)
        QCOMPARE(b.ref_count, 0u); // cached-free blocks are free
    QCOMPARE(observer.ends(), (std::vector{FinishReason::Abort, FinishReason::Abort}));
}

void TestEngineService::a_request_past_the_context_ends_with_the_engines_error() {
    EngineService service(service_config(), model_);
    const std::uint32_t context = service.model().config().context_length;
    auto handle = service.submit(prompt("Once upon a time"), greedy(context));
    auto got = collect(*handle);
    QCOMPARE(got[0].finish, std::optional(FinishReason::Error));
    QVERIFY2(got[0].error.find("exceeds the model's context of " + std::to_string(context)) != std::string::npos,
             got[0].error.c_str());
    // The service goes on.
    auto next = service.submit(prompt("Once upon a time"), greedy(4));
    QCOMPARE(collect(*next)[0].finish, std::optional(FinishReason::Length));
}

void TestEngineService::max_waiting_refuses_with_503() {
    ServiceOptions options;
    options.max_waiting = 3;
    HeldService held(model_, options);
    TestObserver& observer = held.observer;
    EngineService& service = held.service;
    const std::vector<TokenId> p = prompt("Once upon a time");
    std::vector<std::shared_ptr<RequestHandle>> handles{service.submit(p, greedy(400))};
    QVERIFY(observer.wait_held()); // nothing leaves the queue now
    std::optional<ApiError> refused;
    while (!refused && handles.size() <= options.max_waiting) {
        try {
            handles.push_back(service.submit(p, greedy(400)));
        } catch (const ApiError& e) {
            refused = e;
        }
    }
    QVERIFY(refused);
    QCOMPARE(refused->status(), 503);
    QVERIFY2(std::string(refused->what()).find("--max-waiting 3") != std::string::npos, refused->what());

    observer.release();
    service.drain(0ms);
    try {
        service.submit(p, greedy(4));
        QFAIL("a drained service took a request");
    } catch (const ApiError& e) {
        QCOMPARE(e.status(), 503);
        QVERIFY2(std::string(e.what()).find("shutting down") != std::string::npos, e.what());
    }
    for (const auto& h : handles)
        QVERIFY(h->done());
}

void TestEngineService::drain_aborts_what_runs() {
    HeldService held(model_);
    TestObserver& observer = held.observer;
    EngineService& service = held.service;
    const std::vector<TokenId> p = prompt("Once upon a time");
    std::vector<std::shared_ptr<RequestHandle>> handles;
    for (int i = 0; i < 16; ++i)
        handles.push_back(service.submit(p, greedy(400)));
    QVERIFY(observer.wait_held());
    // drain() stops taking requests at once, then waits for the held engine
    // thread; it is let go once submit() says so.
    auto drained = std::async(std::launch::async, [&] { service.drain(0ms); });
    for (bool refused = false; !refused;) {
        try {
            handles.push_back(service.submit(p, greedy(400)));
        } catch (const ApiError&) {
            refused = true;
        }
    }
    observer.release();
    drained.get();
    service.drain(0ms); // idempotent
    for (const auto& h : handles) {
        QVERIFY(h->done());
        QCOMPARE(collect(*h)[0].finish, std::optional(FinishReason::Abort));
    }
    const auto last = service.snapshot();
    QCOMPARE(last->running + last->waiting + last->swapped, std::size_t(0));
}

void TestEngineService::destructor_while_busy_returns() {
    std::vector<std::shared_ptr<RequestHandle>> handles;
    {
        EngineService service(service_config(), model_);
        const std::vector<TokenId> p = prompt("Once upon a time");
        for (int i = 0; i < 8; ++i)
            handles.push_back(service.submit(p, greedy(400)));
        QVERIFY(handles[0]->next(kPatience)); // it runs
    }
    for (const auto& h : handles)
        QVERIFY(h->done());
}

void TestEngineService::observer_hears_each_request_once() {
    TestObserver observer;
    std::vector<std::shared_ptr<RequestHandle>> handles;
    std::size_t gaps = 0; // each sample's tokens after its first
    {
        ServiceOptions options;
        options.snapshot_interval_s = 0; // one per step: many snapshots to check
        EngineService service(service_config(), model_, options, &observer);
        for (std::uint32_t i = 0; i < 6; ++i) {
            RequestParams params = greedy(20);
            params.n = 1 + i % 2;
            handles.push_back(service.submit(prompt("Once upon a time"), params));
        }
        for (const auto& h : handles)
            for (const auto& [index, got] : collect(*h)) {
                QCOMPARE(got.finish, std::optional(FinishReason::Length));
                gaps += got.tokens.size() - 1;
            }
        service.drain(kPatience);
        QCOMPARE(observer.steps().size(), std::size_t(service.snapshot_version()));
    }
    QCOMPARE(observer.first_tokens(), handles.size());
    QCOMPARE(observer.ends(), std::vector<FinishReason>(handles.size(), FinishReason::Length));
    QCOMPARE(observer.inter_tokens(), gaps);
    const std::vector<std::uint64_t> steps = observer.steps();
    QVERIFY(steps.size() > 2);
    QVERIFY(std::ranges::is_sorted(steps));
    QVERIFY(steps.back() > 0);
}

void TestEngineService::wait_snapshot_times_out_when_idle() {
    EngineService service(service_config(), model_);
    const std::uint64_t first = service.snapshot_version();
    QCOMPARE(first, std::uint64_t(1)); // published at construction
    const auto same = service.wait_snapshot(first, 20ms);
    QVERIFY(same == service.snapshot());
    QCOMPARE(service.snapshot_version(), first);

    auto handle = service.submit(prompt("Once upon a time"), greedy(8));
    QVERIFY(service.wait_snapshot(first, kPatience) != same);
    QVERIFY(service.snapshot_version() > first);
    collect(*handle);
}

QTEST_GUILESS_MAIN(TestEngineService)
#include "test_engine_service.moc"
