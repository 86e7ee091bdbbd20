// The engine on its own thread (engine/service/engine_service.h), on
// stories260K: a submitted request streams what run_to_completion gives;
// many submitters at once each get their own outputs; the context limit is
// refused as submit() returns, max_waiting and drain too; cancelling, drain
// and the destructor end every handle; the observer hears once of each
// request's first token and end, of every output and unpublished step, and
// of a workload's progress; a request's client tag reaches the snapshot. To act while a request
// is provably mid-generation, a test holds the engine thread inside the
// observer's first on_first_token (Gate) instead of racing it.
#include <QtTest>

#include <algorithm>
#include <future>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "engine/service/engine_service.h"
#include "engine/completion.h"
#include "support/test_models.h"

using namespace kvscope;
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

// The handle of a request the service must take (a refusal fails the test).
std::shared_ptr<RequestHandle> take(EngineService& service, std::vector<TokenId> prompt, const RequestParams& params) {
    Submitted submitted = service.submit(std::move(prompt), params);
    if (!submitted.handle)
        throw std::runtime_error("the service refused: " + submitted.refusal->message);
    return submitted.handle;
}

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
    void on_snapshot(const std::shared_ptr<const EngineSnapshot>& s) override {
        const std::lock_guard lock(mutex_);
        steps_.push_back(s->step);
        for (const SeqSnapshot& seq : s->seqs)
            tags_seen_.insert(seq.client_tag);
    }
    void on_step(const std::shared_ptr<const EngineSnapshot>& s) override {
        const std::lock_guard lock(mutex_);
        unpublished_.push_back(s->step);
    }
    void on_output(const std::shared_ptr<RequestHandle>& handle, const RequestOutput& out) override {
        const std::lock_guard lock(mutex_);
        tokens_by_tag_[handle->client_tag()] += out.tokens.size();
    }
    // Armed (arm_workload), holds the engine thread inside the first
    // report of a running workload until release().
    void on_workload(const WorkloadProgress& p) override {
        std::unique_lock lock(mutex_);
        workload_.push_back(p);
        changed_.notify_all();
        if (workload_gate_ != Gate::Armed || p.over)
            return;
        workload_gate_ = Gate::Holding;
        changed_.notify_all();
        changed_.wait(lock, [this] { return workload_gate_ == Gate::Open; });
    }
    void arm_workload() {
        const std::lock_guard lock(mutex_);
        workload_gate_ = Gate::Armed;
    }
    bool wait_workload_held() {
        std::unique_lock lock(mutex_);
        return changed_.wait_for(lock, kPatience, [this] { return workload_gate_ == Gate::Holding; });
    }
    void release_workload() {
        {
            const std::lock_guard lock(mutex_);
            workload_gate_ = Gate::Open;
        }
        changed_.notify_all();
    }
    // The workload's reports once one says it is over; empty after kPatience.
    std::vector<WorkloadProgress> wait_workload_over() {
        std::unique_lock lock(mutex_);
        const bool over = changed_.wait_for(lock, kPatience, [this] { return !workload_.empty() && workload_.back().over; });
        return over ? workload_ : std::vector<WorkloadProgress>{};
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
    std::vector<std::uint64_t> unpublished() const { return locked(unpublished_); }
    std::map<std::uint64_t, std::size_t> tokens_by_tag() const { return locked(tokens_by_tag_); }
    std::set<std::uint64_t> tags_seen() const { return locked(tags_seen_); } // in published snapshots

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
    Gate workload_gate_ = Gate::Open;
    std::size_t first_tokens_ = 0, inter_tokens_ = 0;
    std::vector<FinishReason> ends_;
    std::vector<std::uint64_t> steps_, unpublished_;
    std::map<std::uint64_t, std::size_t> tokens_by_tag_;
    std::set<std::uint64_t> tags_seen_;
    std::vector<WorkloadProgress> workload_;
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
    void a_request_past_the_context_is_refused_as_submitted();
    void max_waiting_refuses_with_503();
    void drain_aborts_what_runs();
    void destructor_while_busy_returns();
    void observer_hears_each_request_once();
    void wait_snapshot_times_out_when_idle();
    void a_workload_runs_to_its_end_and_is_reported();
    void client_tags_reach_outputs_and_snapshots();

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
    Engine engine(config_for_one_request(service_config(), model_->config(), p.size() + tokens), model_);
    return run_to_completion(engine, p, greedy(tokens));
}

void TestEngineService::greedy_output_equals_run_to_completion() {
    const std::vector<TokenId> p = prompt("Once upon a time, there was a little girl");
    const Completion want = reference(p, 48);
    EngineService service(service_config(), model_);
    auto handle = take(service, p, greedy(48));
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
                    handles.push_back(take(service, prompts[(t + i) % prompts.size()], greedy(kTokens)));
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
    auto running = take(service, p, greedy(400));
    QVERIFY(observer.wait_held()); // mid-step, its first token sampled
    // Cancelled while the engine thread is held: it never reaches the engine.
    auto queued = take(service, p, greedy(400));
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

    // The engine counts the running one aborted; the queued one never reached it.
    const auto idle = snapshot_when(service, [](const EngineSnapshot& s) { return s.aborted_requests == 1; });
    QVERIFY(idle);
    QCOMPARE(idle->completed_requests, std::uint64_t(0));
    QCOMPARE(idle->running, std::size_t(0));
    QCOMPARE(idle->waiting, std::size_t(0));
    QVERIFY(idle->seqs.empty());
    QVERIFY(idle->pool->sequences.empty());
    for (const BlockInfo& b : idle->pool->blocks)
        QCOMPARE(b.ref_count, 0u); // cached-free blocks are free
    QCOMPARE(observer.ends(), (std::vector{FinishReason::Abort, FinishReason::Abort}));
}

void TestEngineService::a_request_past_the_context_is_refused_as_submitted() {
    EngineService service(service_config(), model_);
    const std::uint32_t context = service.model().config().context_length;
    const Submitted refused = service.submit(prompt("Once upon a time"), greedy(context));
    QVERIFY(!refused.handle);
    QCOMPARE(refused.refusal->kind, ServiceRefusal::Kind::Engine);
    QCOMPARE(refused.refusal->engine->reason, RefusalReason::OverContext);
    QVERIFY2(refused.refusal->message.find("exceeds the model's context of " + std::to_string(context)) !=
                 std::string::npos,
             refused.refusal->message.c_str());
    // The service goes on.
    auto next = take(service, prompt("Once upon a time"), greedy(4));
    QCOMPARE(collect(*next)[0].finish, std::optional(FinishReason::Length));
}

void TestEngineService::max_waiting_refuses_with_503() {
    ServiceOptions options;
    options.max_waiting = 3;
    HeldService held(model_, options);
    TestObserver& observer = held.observer;
    EngineService& service = held.service;
    const std::vector<TokenId> p = prompt("Once upon a time");
    std::vector<std::shared_ptr<RequestHandle>> handles{take(service, p, greedy(400))};
    QVERIFY(observer.wait_held()); // nothing leaves the queue now
    std::optional<ServiceRefusal> refused;
    while (!refused && handles.size() <= options.max_waiting) {
        Submitted next = service.submit(p, greedy(400));
        if (next.handle)
            handles.push_back(next.handle);
        refused = next.refusal;
    }
    QVERIFY(refused);
    QCOMPARE(refused->kind, ServiceRefusal::Kind::Busy);
    QVERIFY2(refused->message.find("max_waiting = 3") != std::string::npos, refused->message.c_str());

    observer.release();
    service.drain(0ms);
    const Submitted drained = service.submit(p, greedy(4));
    QVERIFY(!drained.handle);
    QCOMPARE(drained.refusal->kind, ServiceRefusal::Kind::Draining);
    QVERIFY2(drained.refusal->message.find("shutting down") != std::string::npos, drained.refusal->message.c_str());
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
        handles.push_back(take(service, p, greedy(400)));
    QVERIFY(observer.wait_held());
    // drain() stops taking requests at once, then waits for the held engine
    // thread; it is let go once submit() says so.
    auto drained = std::async(std::launch::async, [&] { service.drain(0ms); });
    for (Submitted next = service.submit(p, greedy(400)); next.handle; next = service.submit(p, greedy(400)))
        handles.push_back(next.handle);
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
            handles.push_back(take(service, p, greedy(400)));
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
        options.snapshot_interval = 0ms; // one per step: many snapshots to check
        EngineService service(service_config(), model_, options, &observer);
        for (std::uint32_t i = 0; i < 6; ++i) {
            RequestParams params = greedy(20);
            params.n = 1 + i % 2;
            handles.push_back(take(service, prompt("Once upon a time"), params));
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

    auto handle = take(service, prompt("Once upon a time"), greedy(8));
    QVERIFY(service.wait_snapshot(first, kPatience) != same);
    QVERIFY(service.snapshot_version() > first);
    collect(*handle);
}

// A workload's requests arrive, run and end on the engine thread; the
// observer hears its progress and its end, and only submitted requests'
// outputs (a workload's are counted, not handed out).
void TestEngineService::a_workload_runs_to_its_end_and_is_reported() {
    TestObserver observer;
    ServiceOptions options;
    options.record_steps = true;
    options.snapshot_interval = 1h; // every step but the idle one goes to on_step
    EngineService service(service_config(), model_, options, &observer);
    WorkloadSpec spec;
    spec.requests = 6;
    spec.vocab = service.model().config().vocab_size;
    spec.prompt_len = 12;
    spec.output_len = 8;
    spec.max_total = 64;
    service.start_workload(make_workload(spec), 1, 0);
    const std::vector<WorkloadProgress> reports = observer.wait_workload_over();
    QVERIFY(!reports.empty());
    const WorkloadProgress& last = reports.back();
    QCOMPARE(last.total, std::size_t(6));
    QCOMPARE(last.submitted, std::size_t(6));
    QCOMPARE(last.ended, std::size_t(6));
    QCOMPARE(last.aborted, std::size_t(0));
    QVERIFY(observer.tokens_by_tag().empty());
    QVERIFY(!observer.unpublished().empty()); // the steps a replay can show
    const auto idle = snapshot_when(service, [](const EngineSnapshot& s) { return s.completed_requests == 6; });
    QVERIFY(idle);
    QCOMPARE(idle->refused_requests, std::uint64_t(0));

    // Stopped mid-way (the stop is queued while the engine thread is held
    // in the workload's first report): what runs is aborted, and the end
    // says how many.
    TestObserver stopped;
    stopped.arm_workload();
    EngineService busy(service_config(), model_, {}, &stopped);
    spec.output_len = 300;
    spec.max_total = 400;
    busy.start_workload(make_workload(spec), 1, 0);
    QVERIFY(stopped.wait_workload_held());
    busy.stop_workload();
    stopped.release_workload();
    const std::vector<WorkloadProgress> ends = stopped.wait_workload_over();
    QVERIFY(!ends.empty());
    QVERIFY(ends.back().aborted > 0);
}

void TestEngineService::client_tags_reach_outputs_and_snapshots() {
    TestObserver observer;
    ServiceOptions options;
    options.snapshot_interval = 0ms; // every step published
    EngineService service(service_config(), model_, options, &observer);
    RequestParams tagged = greedy(30);
    tagged.client_tag = 7;
    auto handle = take(service, prompt("Once upon a time"), tagged);
    QCOMPARE(handle->client_tag(), std::uint64_t(7));
    collect(*handle);
    service.drain(kPatience); // the observer has heard everything
    QCOMPARE(observer.tokens_by_tag().at(7), std::size_t(30));
    QCOMPARE(observer.tags_seen(), std::set<std::uint64_t>{7});
}

QTEST_GUILESS_MAIN(TestEngineService)
#include "test_engine_service.moc"
