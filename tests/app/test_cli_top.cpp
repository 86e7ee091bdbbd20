// kvscope-cli top against real servers on loopback: a `kvscope-cli serve`
// of stories260K (its fields, its usage rising under `bench client` load
// and falling back to zero, and the monitor's engine snapshot equal to
// /kv/snapshot at the same step) and `fake-vllm` (tests/attach: vLLM's
// HTTP side and its KV events per rank; vLLM itself needs a GPU).
// llama.cpp's server: test_cli_top_llamacpp.
#include <QtTest>

#include <map>
#include <mutex>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "net/attach/remote_monitor.h"
#include "cli_runner.h"
#include "engine/snapshot_json.h"
#include "support/test_models.h"
#include "top_processes.h"

using kvscope::test::json_of;
using kvscope::test::run_cli;
using kvscope::test::UrlProcess;
using nlohmann::json;
using namespace std::chrono_literals;

namespace {

constexpr int kPatienceMs = 30000;

// A load of a few seconds on stories260K that keeps the engine busy: its
// steps take well under a millisecond, so with fewer or shorter requests
// it drains between them, and /kv/stream (which sends the newest snapshot,
// the idle one after each drain) would show it idle most of the time.
QStringList bench_load(const QString& url) {
    return {"--log-level", "warn", "bench", "client", "--url", url, "--requests", "48", "--concurrency", "16",
            "--lengths", "fixed", "--prompt-len", "100", "--output-len", "200"};
}

} // namespace

class TestCliTop : public QObject {
    Q_OBJECT
private slots:
    void initTestCase();
    void kvscope_once_json_gives_the_fields();
    void kvscope_usage_rises_under_load_and_falls_back_to_zero();
    void kvscope_stream_snapshot_equals_kv_snapshot_at_the_same_step();
    void vllm_once_json_gives_ranks_and_prefix_caches();
    void options_that_cannot_work_are_errors();

private:
    UrlProcess serve_;
};

// A small KV pool (f32, 16 MiB: about 800 blocks) keeps snapshots small.
void TestCliTop::initTestCase() {
    KVSCOPE_REQUIRE_MODEL(model, "stories260K-f32.gguf");
    QVERIFY(serve_.start(QStringLiteral(KVSCOPE_CLI),
                         {"--log-level", "warn", "serve", "--model", model, "--port", "0", "--threads", "1",
                          "--kv-dtype", "f32", "--kv-budget-mib", "16"}));
}

void TestCliTop::kvscope_once_json_gives_the_fields() {
    const auto r = run_cli({"top", "--url", serve_.url(), "--once", "--json"});
    QVERIFY2(r.exit_code == 0, r.err.constData());
    const json j = json_of(r.out);
    QCOMPARE(j["kind"], "kvscope");
    QCOMPARE(j["url"], serve_.url().toStdString());
    QCOMPARE(j["model"], "stories260K-f32");
    QCOMPARE(j["link"], "live");
    QCOMPARE(j["reconnects"], 0);
    QCOMPARE(j["faults"], json::array());
    QVERIFY(j["engine_step"].is_number());
    const json& total = j["total"];
    QVERIFY(total["kv_blocks_total"].get<int>() > 0);
    QCOMPARE(total["block_size"], 16);
    QCOMPARE(total["kv_dtype"], "f32");
    QCOMPARE(total["kv_tokens_capacity"], total["kv_blocks_total"].get<int>() * 16);
    for (const char* key : {"kv_blocks_used", "kv_usage", "running", "waiting", "preemptions"})
        QVERIFY2(total[key].is_number(), key);
    QVERIFY(total["ttft_ms"].contains("p50") && total["itl_ms"].contains("p99"));
    QCOMPARE(j["slots"], json::array());
    QCOMPARE(j["ranks"], json::array());
    QCOMPARE(j["cannot_tell"], json::array()); // kvscope tells everything
}

// top --json prints a line per interval; under load its usage rises above
// zero, and once the load is done it falls back to zero with nothing running.
void TestCliTop::kvscope_usage_rises_under_load_and_falls_back_to_zero() {
    QProcess top;
    top.start(QStringLiteral(KVSCOPE_CLI), {"top", "--url", serve_.url(), "--json", "--interval", "0.1"});
    QProcess load;
    load.start(QStringLiteral(KVSCOPE_CLI), bench_load(serve_.url()));
    bool rose = false, fell = false;
    QElapsedTimer waited;
    waited.start();
    while (!fell && waited.elapsed() < kPatienceMs) {
        if (!top.canReadLine() && !top.waitForReadyRead(1000))
            continue;
        const json j = json_of(top.readLine());
        QVERIFY(j.is_object());
        const json& total = j["total"];
        if (!total["kv_usage"].is_number())
            continue; // before the first answer
        rose = rose || total["kv_usage"].get<double>() > 0;
        const bool load_done = load.waitForFinished(0) || load.state() == QProcess::NotRunning;
        fell = rose && load_done && total["kv_usage"] == 0 && total["kv_blocks_used"] == 0 && total["running"] == 0;
    }
    QVERIFY(load.state() == QProcess::NotRunning || load.waitForFinished(kPatienceMs));
    QCOMPARE(load.exitCode(), 0);
    QVERIFY(rose);
    QVERIFY(fell);
    top.terminate(); // SIGTERM: top ends cleanly
    QVERIFY(top.waitForFinished(10000));
    QCOMPARE(top.exitStatus(), QProcess::NormalExit);
    QCOMPARE(top.exitCode(), 0);
}

// The acceptance check: the monitor's engine snapshot (from /kv/stream)
// equals /kv/snapshot when both are of the same engine step. Under load
// the engine steps between the two reads, so /kv/snapshot is read right
// after each streamed snapshot until a step matches (bounded), and again
// at idle.
void TestCliTop::kvscope_stream_snapshot_equals_kv_snapshot_at_the_same_step() {
    std::mutex mutex;
    std::map<std::uint64_t, std::shared_ptr<const kvscope::EngineSnapshot>> streamed;
    kvscope::attach::ConnectOptions o;
    o.url = serve_.url().toStdString();
    const kvscope::attach::RemoteMonitor monitor(o, [&](std::shared_ptr<const kvscope::attach::RemoteSample> s) {
        std::lock_guard lock(mutex);
        if (s->engine)
            streamed.emplace(s->engine->step, s->engine);
    });
    httplib::Client client(o.url);
    // Compares when the steps are equal; counts the match in `matches`
    // (when `busy`, only a snapshot with requests running).
    const auto same_as_streamed = [&](int& matches, bool busy) {
        const auto r = client.Get("/kv/snapshot");
        QVERIFY(r && r->status == 200);
        const auto snapshot = nlohmann::ordered_json::parse(r->body);
        std::shared_ptr<const kvscope::EngineSnapshot> twin;
        {
            std::lock_guard lock(mutex);
            const auto it = streamed.find(snapshot["step"].get<std::uint64_t>());
            if (it != streamed.end())
                twin = it->second;
        }
        if (!twin)
            return;
        matches += !busy || snapshot["running"].get<int>() > 0;
        const auto mine = kvscope::to_json(*twin);
        QVERIFY2(mine == snapshot, qPrintable(QString::fromStdString("step " + snapshot["step"].dump())));
    };

    QProcess load;
    load.start(QStringLiteral(KVSCOPE_CLI), bench_load(serve_.url()));
    int under_load = 0;
    std::uint64_t seen = 0;
    for (int tries = 0; tries < 200 && under_load == 0 && !load.waitForFinished(0); ++tries) {
        monitor.wait_next(seen, 1000ms);
        same_as_streamed(under_load, true);
        if (QTest::currentTestFailed())
            return;
    }
    QVERIFY(load.state() == QProcess::NotRunning || load.waitForFinished(kPatienceMs));
    int at_idle = 0;
    for (int tries = 0; tries < 100 && at_idle == 0; ++tries) {
        monitor.wait_next(seen, 200ms);
        same_as_streamed(at_idle, false);
        if (QTest::currentTestFailed())
            return;
    }
    QCOMPARE(at_idle, 1);
    // Under load the server publishes a snapshot every 100 ms of stepping,
    // and /kv/snapshot read right after a streamed one is mostly the same.
    QCOMPARE(under_load, 1);
}

void TestCliTop::vllm_once_json_gives_ranks_and_prefix_caches() {
    UrlProcess vllm;
    QVERIFY(vllm.start(QStringLiteral(FAKE_VLLM), {"--ranks", "2", "--seconds", "60"}, 2));
    const QStringList events = vllm.lines()[1].section(": ", 1).split(' '); // --kv-events A,B --kv-replay C,D --kv-topic T
    QCOMPARE(events.size(), 6);
    const auto r = run_cli(QStringList{"top", "--url", vllm.url(), "--once", "--json"} + events);
    QVERIFY2(r.exit_code == 0, r.err.constData());
    const json j = json_of(r.out);
    QCOMPARE(j["kind"], "vllm");
    QCOMPARE(j["model"], "fake-vllm-model");
    QCOMPARE(j["link"], "live");
    QCOMPARE(j["total"]["kv_blocks_total"], 2048);
    QCOMPARE(j["total"]["block_size"], 16);
    QCOMPARE(j["total"]["kv_dtype"], "fp8"); // fake-vllm's default, as --kv-cache-dtype fp8
    QCOMPARE(j["total"]["kv_bytes_per_token"], 32 * 8 * 128 * 2); // its Llama-3-8B's K and V, 1 byte each
    QCOMPARE(j["slots"], json::array());
    QCOMPARE(j["ranks"].size(), 2u);
    const QStringList endpoints = events[1].split(',');
    for (int rank = 0; rank < 2; ++rank) {
        const json& r_json = j["ranks"][rank];
        QCOMPARE(r_json["rank"], rank);
        QCOMPARE(r_json["figures"]["block_size"], 16);
        QVERIFY(r_json["figures"]["kv_usage"].is_number());
        QCOMPARE(r_json["kv_events_endpoint"], endpoints[rank].toStdString());
        const json& p = r_json["prefix_cache"];
        QVERIFY(p.is_object());
        QVERIFY2(p["batches"].get<int>() > 0, p.dump().c_str());
        for (const char* key : {"blocks", "chains", "longest_chain", "stored", "removed", "cleared", "replayed",
                                "lost", "last_seq", "age_s", "chain_lengths"})
            QVERIFY2(p.contains(key), key);
    }
    // With KV events, vLLM's one blind spot is the block map.
    QCOMPARE(j["cannot_tell"].size(), 1u);
}

void TestCliTop::options_that_cannot_work_are_errors() {
    const auto no_url = run_cli({"top", "--once"});
    QCOMPARE(no_url.exit_code, 1);
    QVERIFY2(no_url.err.contains("--url"), no_url.err.constData());
    const auto bad_url = run_cli({"top", "--url", "localhost:8000", "--once"});
    QCOMPARE(bad_url.exit_code, 1);
    QVERIFY2(bad_url.err.contains("http://HOST:PORT"), bad_url.err.constData());
    const auto bad_kind = run_cli({"top", "--url", serve_.url(), "--server-kind", "tgi", "--once"});
    QCOMPARE(bad_kind.exit_code, 1);
    QVERIFY2(bad_kind.err.contains("unknown server kind 'tgi'"), bad_kind.err.constData());
    const auto bad_unified = run_cli({"top", "--url", serve_.url(), "--kv-unified", "sometimes", "--once"});
    QCOMPARE(bad_unified.exit_code, 1);
    QVERIFY2(bad_unified.err.contains("--kv-unified takes yes"), bad_unified.err.constData());
}

QTEST_GUILESS_MAIN(TestCliTop)
#include "test_cli_top.moc"
