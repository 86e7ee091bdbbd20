// RemoteMonitor against an in-test vLLM-shaped server on loopback
// (fake_vllm_server.h): kind detection, figures per rank, and the faults a
// monitor must live through (a server that dies and comes back with its
// counters reset, malformed metrics, a server slower than the timeout),
// without blocking its callers or its destructor.
#include <QtTest>

#include <algorithm>
#include <chrono>
#include <functional>
#include <memory>

#include <httplib.h>

#include "net/attach/remote_monitor.h"
#include "net/attach/fake_vllm_publisher.h"
#include "net/attach/fake_vllm_server.h"
#include "support/wait.h"

using namespace std::chrono_literals;
using kvscope::attach::ConnectOptions;
using kvscope::attach::ConnectOptionsError;
using kvscope::attach::parse_connect_options;
using kvscope::attach::LinkState;
using kvscope::attach::RemoteMonitor;
using kvscope::attach::RemoteSample;
using kvscope::attach::ServerKind;
using kvscope::attach::BlockRemoved;
using kvscope::attach::BlockStored;
using kvscope::attach::KvEventBatch;
using kvscope::attach::testing::FakeVllmPublisher;
using kvscope::test::FakeVllmRank;
using kvscope::test::FakeVllmServer;
using kvscope::test::vllm_metrics_text;

namespace {

using Sample = std::shared_ptr<const RemoteSample>;

// Generous: a loaded CI machine may be slow, and nothing here asserts time.
using kvscope::test::kPatience;
using kvscope::test::wait_until;

ConnectOptions options_for(const std::string& url) {
    ConnectOptions o;
    o.url = url;
    o.interval = 100ms;
    o.timeout = 2000ms;
    return o;
}

// The first sample satisfying `done` (null when kPatience passes first).
// Each try waits for the monitor's next sample, so none goes by unseen
// unless two come out during one check.
Sample wait_for(const RemoteMonitor& monitor, const std::function<bool(const RemoteSample&)>& done) {
    std::uint64_t seen = 0;
    Sample s = monitor.latest();
    const bool found = wait_until([&] {
        if (done(*s))
            return true;
        s = monitor.wait_next(seen, 200ms);
        return done(*s);
    });
    return found ? s : nullptr;
}

bool has_fault(const RemoteSample& s, const std::string& part) {
    return std::any_of(s.faults.begin(), s.faults.end(),
                       [&](const std::string& f) { return f.find(part) != std::string::npos; });
}

std::string faults_of(const Sample& s) {
    std::string all;
    for (const std::string& f : s ? s->faults : std::vector<std::string>{})
        all += f + " | ";
    return all;
}

std::vector<FakeVllmRank> two_ranks() {
    std::vector<FakeVllmRank> ranks(2);
    ranks[0].kv_usage = 0.25;
    ranks[0].running = 3;
    ranks[0].waiting = 1;
    ranks[0].generation_tokens = 5000;
    ranks[0].prompt_tokens = 9000;
    ranks[1].kv_usage = 0.75;
    ranks[1].running = 5;
    ranks[1].waiting = 2;
    ranks[1].generation_tokens = 7000;
    ranks[1].prompt_tokens = 11000;
    return ranks;
}

bool is_live(const RemoteSample& s) { return s.link == LinkState::Live; }

} // namespace

class TestRemoteMonitor : public QObject {
    Q_OBJECT
private slots:
    void options_that_cannot_work_are_refused();
    void typed_text_is_parsed_one_way();
    void detects_vllm_and_reads_each_rank();
    void kv_events_fill_each_ranks_prefix_cache();
    void a_server_that_names_no_kind_is_a_fault();
    void server_dies_and_restarts_with_counters_reset();
    void malformed_metrics_are_a_fault_and_the_rest_is_read();
    void a_slow_server_blocks_no_caller();
    void destructor_returns_while_a_request_hangs();
};

// The one parser of what a person types (the app's dialog, --connect, top).
void TestRemoteMonitor::typed_text_is_parsed_one_way() {
    const ConnectOptions o = parse_connect_options({.url = "  http://127.0.0.1:8000// ",
                                                    .api_key = " key ",
                                                    .kind = "vllm",
                                                    .kv_events = " tcp://127.0.0.1:5557 ,, tcp://127.0.0.1:5558,",
                                                    .kv_replay = "tcp://127.0.0.1:5567",
                                                    .kv_topic = " kv ",
                                                    .kv_dtype = "",
                                                    .kv_unified = " yes "});
    QCOMPARE(o.url, std::string("http://127.0.0.1:8000"));
    QCOMPARE(o.api_key, std::string("key"));
    QCOMPARE(o.kind, std::optional(ServerKind::Vllm));
    QCOMPARE(o.kv_events, (std::vector<std::string>{"tcp://127.0.0.1:5557", "tcp://127.0.0.1:5558"}));
    QCOMPARE(o.kv_replay, std::vector<std::string>{"tcp://127.0.0.1:5567"});
    QCOMPARE(o.kv_topic, std::string("kv"));
    QCOMPARE(o.kv_dtype, std::string("f16")); // empty: llama.cpp's default
    QCOMPARE(o.kv_unified, std::optional(true));
    QVERIFY(!parse_connect_options({.url = "http://h:1", .kind = " auto "}).kind);
    try {
        parse_connect_options({.url = "http://h:1", .kind = "tgi"});
        QFAIL("an unknown kind was taken");
    } catch (const ConnectOptionsError& e) {
        QVERIFY2(QString::fromUtf8(e.what()).contains("unknown server kind 'tgi'"), e.what());
    }
    QVERIFY_THROWS_EXCEPTION(ConnectOptionsError, parse_connect_options({.url = "http://h:1", .kv_dtype = "fp8"}));
    QVERIFY_THROWS_EXCEPTION(ConnectOptionsError, parse_connect_options({.url = "http://h:1", .kv_unified = "maybe"}));
}

void TestRemoteMonitor::options_that_cannot_work_are_refused() {
    const auto refused = [](std::function<void(ConnectOptions&)> change) {
        ConnectOptions o = options_for("http://127.0.0.1:8000");
        change(o);
        try {
            kvscope::attach::validate(o);
        } catch (const ConnectOptionsError&) {
            return true;
        }
        return false;
    };
    QVERIFY(!refused([](ConnectOptions&) {}));
    QVERIFY(!refused([](ConnectOptions& o) { o.url += "/"; }));
    QVERIFY(refused([](ConnectOptions& o) { o.url = "127.0.0.1:8000"; }));
    QVERIFY(!refused([](ConnectOptions& o) { o.url = "https://127.0.0.1:8000"; }));
    QVERIFY(refused([](ConnectOptions& o) { o.url = "ftp://127.0.0.1:8000"; }));
    QVERIFY(refused([](ConnectOptions& o) { o.url = "http://127.0.0.1:99999"; }));
    QVERIFY(refused([](ConnectOptions& o) { o.url = "http://127.0.0.1:8000/v1"; }));
    QVERIFY(refused([](ConnectOptions& o) { o.kv_events = {"tcp://*:5557"}; }));
    QVERIFY(refused([](ConnectOptions& o) { o.kv_events = {"127.0.0.1:5557"}; }));
    QVERIFY(refused([](ConnectOptions& o) { o.kv_replay = {"tcp://127.0.0.1:5558"}; }));
    QVERIFY(!refused([](ConnectOptions& o) {
        o.kv_events = {"tcp://127.0.0.1:5557", "tcp://127.0.0.1:5558"};
        o.kv_replay = {"tcp://127.0.0.1:5567"};
    }));
    QVERIFY(refused([](ConnectOptions& o) {
        o.kind = ServerKind::LlamaCpp;
        o.kv_events = {"tcp://127.0.0.1:5557"};
    }));
    QVERIFY(refused([](ConnectOptions& o) { o.kv_dtype = "int4"; }));
    QVERIFY(!refused([](ConnectOptions& o) { o.kv_dtype = "q8_0"; }));
    QVERIFY(refused([](ConnectOptions& o) { o.interval = 0ms; }));
    QVERIFY_THROWS_EXCEPTION(ConnectOptionsError, RemoteMonitor(options_for("localhost")));
}

void TestRemoteMonitor::detects_vllm_and_reads_each_rank() {
    FakeVllmServer server("served-llama");
    std::vector<FakeVllmRank> ranks = two_ranks();
    ranks[0].cache_dtype = "fp8";
    ranks[0].kv_cache_memory_bytes = 1024 * 16 * 65536; // 1024 blocks of 16 tokens of 64 KiB
    server.set_metrics(vllm_metrics_text(server.model(), ranks));
    const RemoteMonitor monitor(options_for(server.url()));
    QCOMPARE(monitor.latest()->link, LinkState::Connecting);
    const Sample s = wait_for(monitor, [](const RemoteSample& x) { return is_live(x) && x.ranks.size() == 2; });
    QVERIFY2(s, qPrintable(QString::fromStdString(faults_of(monitor.latest()))));
    QCOMPARE(s->kind, ServerKind::Vllm);
    QCOMPARE(s->url, server.url());
    QCOMPARE(s->model, std::optional<std::string>("served-llama"));
    QCOMPARE(s->ranks[0].rank, 0);
    QCOMPARE(s->ranks[1].rank, 1);
    QCOMPARE(s->ranks[0].figures.kv_usage, std::optional<double>(0.25));
    QCOMPARE(s->ranks[1].figures.kv_usage, std::optional<double>(0.75));
    QCOMPARE(s->ranks[1].figures.running, std::optional<double>(5));
    QCOMPARE(s->ranks[1].figures.block_size, std::optional<std::uint32_t>(16));
    QCOMPARE(s->ranks[0].figures.kv_dtype, std::optional<std::string>("fp8"));
    QCOMPARE(s->ranks[0].figures.kv_bytes_per_token, std::optional<std::uint64_t>(65536));
    QCOMPARE(s->ranks[1].figures.kv_dtype, std::optional<std::string>("auto"));
    QVERIFY(!s->ranks[1].figures.kv_bytes_per_token); // no kv_cache_memory_bytes label: not guessed
    QCOMPARE(s->total.running, std::optional<double>(8));
    QCOMPARE(s->total.waiting, std::optional<double>(3));
    QCOMPARE(s->total.kv_usage, std::optional<double>(0.5)); // equal block counts: the mean
    QVERIFY(!s->engine);
    QVERIFY(s->data_age_s.has_value());
    QCOMPARE(s->reconnects, 0u);
    QVERIFY2(s->faults.empty(), faults_of(s).c_str());
    QVERIFY(server.served("/metrics") >= 1);
}

// /metrics names rank 0 only; the KV events of ranks 0 and 1 each reach
// their rank, rank 1's made for them.
void TestRemoteMonitor::kv_events_fill_each_ranks_prefix_cache() {
    FakeVllmServer server;
    server.set_metrics(vllm_metrics_text(server.model(), {two_ranks()[0]}));
    FakeVllmPublisher rank0, rank1;
    ConnectOptions o = options_for(server.url());
    o.kv_events = {rank0.endpoint(), rank1.endpoint()};
    o.kv_replay = {rank0.replay_endpoint(), rank1.replay_endpoint()};
    o.kv_topic = rank0.topic();
    const RemoteMonitor monitor(o);
    QVERIFY(wait_for(monitor, [](const RemoteSample& x) { return is_live(x) && x.ranks.size() == 2; }));

    // A SUB socket misses what is sent before its connection is up: empty
    // batches until both subscribers have heard one.
    const auto heard = [](const RemoteSample& x) {
        return std::all_of(x.ranks.begin(), x.ranks.end(),
                           [](const auto& r) { return r.prefix_cache && r.prefix_cache->batches > 0; });
    };
    QVERIFY(wait_until([&] {
        if (heard(*monitor.latest()))
            return true;
        rank0.publish(KvEventBatch{});
        rank1.publish(KvEventBatch{});
        return false;
    }));

    // A chain of three blocks on rank 0, two separate blocks on rank 1 (one then evicted).
    const auto batch = [](int rank, std::vector<kvscope::attach::KvEvent> events) {
        KvEventBatch b;
        b.events = std::move(events);
        b.data_parallel_rank = rank;
        return b;
    };
    const auto stored = [](std::vector<kvscope::attach::BlockHash> hashes) {
        BlockStored e;
        e.tokens = 16 * hashes.size();
        e.block_size = 16;
        e.hashes = std::move(hashes);
        return e;
    };
    BlockRemoved evicted;
    evicted.hashes = {22};
    rank0.publish(batch(0, {stored({11, 12, 13})}));
    rank1.publish(batch(1, {stored({21}), stored({22})}));
    rank1.publish(batch(1, {evicted}));
    const Sample s = wait_for(monitor, [](const RemoteSample& x) {
        return x.ranks.size() == 2 && x.ranks[0].prefix_cache && x.ranks[1].prefix_cache &&
               x.ranks[0].prefix_cache->blocks == 3 && x.ranks[1].prefix_cache->removed == 1;
    });
    QVERIFY2(s, faults_of(monitor.latest()).c_str());
    QCOMPARE(s->ranks[0].prefix_cache->longest_chain, 3u);
    QCOMPARE(s->ranks[0].prefix_cache->chains, 1u);
    QCOMPARE(s->ranks[0].kv_events_endpoint, std::optional<std::string>(rank0.endpoint()));
    QCOMPARE(s->ranks[1].prefix_cache->blocks, 1u);
    QCOMPARE(s->ranks[1].figures.kv_usage, std::nullopt); // /metrics does not name rank 1
    QCOMPARE(s->ranks[0].figures.kv_usage, std::optional<double>(0.25));
}

void TestRemoteMonitor::a_server_that_names_no_kind_is_a_fault() {
    httplib::Server bare; // answers 404 to everything
    const int port = bare.bind_to_any_port("127.0.0.1");
    std::thread listener([&] { bare.listen_after_bind(); });
    {
        const RemoteMonitor monitor(options_for("http://127.0.0.1:" + std::to_string(port)));
        const Sample s = wait_for(monitor, [](const RemoteSample& x) { return has_fault(x, "--server-kind"); });
        QVERIFY2(s, faults_of(monitor.latest()).c_str());
        QCOMPARE(s->link, LinkState::Connecting);
    }
    bare.stop();
    listener.join();
}

void TestRemoteMonitor::server_dies_and_restarts_with_counters_reset() {
    auto server = std::make_unique<FakeVllmServer>();
    const int port = server->port();
    std::vector<FakeVllmRank> ranks = two_ranks();
    server->set_metrics(vllm_metrics_text(server->model(), ranks));
    const RemoteMonitor monitor(options_for(server->url()));
    QVERIFY(wait_for(monitor, [](const RemoteSample& x) { return is_live(x) && x.ranks.size() == 2; }));

    server.reset(); // gone
    const Sample down = wait_for(monitor, [](const RemoteSample& s) { return s.link == LinkState::Reconnecting; });
    QVERIFY(down);
    QCOMPARE(down->ranks.size(), 2u); // the last figures stay
    QCOMPARE(down->ranks[1].figures.kv_usage, std::optional<double>(0.75));
    QVERIFY(wait_for(monitor, [](const RemoteSample& s) { return has_fault(s, "connection refused"); }));
    // Each poll that gets no answer is an attempt, and the sample says when the next comes.
    const Sample retried = wait_for(monitor, [](const RemoteSample& s) { return s.failed_polls >= 2; });
    QVERIFY(retried);
    QVERIFY(retried->retry_in_s);
    QVERIFY2(*retried->retry_in_s >= 0.5 && *retried->retry_in_s <= 8.0, std::to_string(*retried->retry_in_s).c_str());
    QCOMPARE(retried->reconnects, 0u); // none came back yet

    // Back on the same port, restarted: its counters start again from (nearly) zero.
    for (FakeVllmRank& r : ranks) {
        r.generation_tokens = 10;
        r.prompt_tokens = 20;
        r.kv_usage = 0.5;
    }
    server = std::make_unique<FakeVllmServer>("fake-vllm-model", port);
    server->set_metrics(vllm_metrics_text(server->model(), ranks));
    const Sample back =
        wait_for(monitor, [](const RemoteSample& s) { return is_live(s) && s.ranks[1].figures.kv_usage == 0.5; });
    QVERIFY2(back, faults_of(monitor.latest()).c_str());
    QCOMPARE(back->reconnects, 1u);
    QCOMPARE(back->failed_polls, 0u);
    QVERIFY(!back->retry_in_s);
    const Sample reset = wait_for(monitor, [](const RemoteSample& s) { return has_fault(s, "reset"); });
    QVERIFY2(reset, faults_of(monitor.latest()).c_str());
}

void TestRemoteMonitor::malformed_metrics_are_a_fault_and_the_rest_is_read() {
    FakeVllmServer server;
    std::vector<FakeVllmRank> ranks = two_ranks();
    server.set_metrics(vllm_metrics_text(server.model(), ranks));
    const RemoteMonitor monitor(options_for(server.url()));
    QVERIFY(wait_for(monitor, [](const RemoteSample& x) { return is_live(x) && x.ranks.size() == 2; }));
    const std::size_t faults_before = monitor.latest()->faults.size();

    ranks[0].running = 7;
    server.set_metrics("vllm:num_requests_waiting{engine=\"0\" 12 oops\n" + vllm_metrics_text(server.model(), ranks));
    const Sample s = wait_for(monitor, [&](const RemoteSample& x) {
        return x.faults.size() > faults_before && x.ranks[0].figures.running == 7;
    });
    QVERIFY2(s, faults_of(monitor.latest()).c_str());
    QCOMPARE(s->link, LinkState::Live); // a bad line is not a dead server
}

void TestRemoteMonitor::a_slow_server_blocks_no_caller() {
    FakeVllmServer server;
    server.set_metrics(vllm_metrics_text(server.model(), two_ranks()));
    ConnectOptions o = options_for(server.url());
    o.timeout = 300ms;
    const RemoteMonitor monitor(o);
    QVERIFY(wait_for(monitor, is_live));

    server.set_delay(10s);
    const Sample slow = wait_for(monitor, [](const RemoteSample& s) { return s.link == LinkState::Reconnecting; });
    QVERIFY(slow);
    QVERIFY2(has_fault(*slow, "no complete answer within 300 ms"), faults_of(slow).c_str());
    QCOMPARE(slow->ranks.size(), 2u);
    // The monitor keeps publishing while the server stalls: its backoff
    // polls end in their timeout, each one a new sample.
    std::uint64_t seen = 0;
    monitor.wait_next(seen, 0ms);
    const std::uint64_t before = seen;
    monitor.wait_next(seen, kPatience);
    QVERIFY(seen > before);

    server.set_delay(0ms);
    const Sample back = wait_for(monitor, is_live);
    QVERIFY(back);
    QCOMPARE(back->reconnects, 1u);
}

// The request in flight waits on a server that answers in 60 s, with a
// 60 s timeout; the destructor must not wait for it.
void TestRemoteMonitor::destructor_returns_while_a_request_hangs() {
    FakeVllmServer server;
    server.set_metrics(vllm_metrics_text(server.model(), two_ranks()));
    ConnectOptions o = options_for(server.url());
    o.timeout = 60s;
    auto monitor = std::make_unique<RemoteMonitor>(o);
    QVERIFY(wait_for(*monitor, is_live));
    server.set_delay(60s);
    // Until a poll that reached the server after the delay was set waits
    // on it, unanswered.
    const int asked = server.requested("/metrics");
    QVERIFY(wait_until([&] { return server.requested("/metrics") > asked; }));
    QVERIFY(server.served("/metrics") < server.requested("/metrics"));
    QElapsedTimer timer;
    timer.start();
    monitor.reset();
    QVERIFY2(timer.elapsed() < 10000, qPrintable(QString::number(timer.elapsed())));
}

QTEST_GUILESS_MAIN(TestRemoteMonitor)
#include "test_remote_monitor.moc"
