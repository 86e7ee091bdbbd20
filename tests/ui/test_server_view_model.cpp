// ServerViewModel: what the connected view shows of hand-made RemoteSamples
// of each kind of server: the figures a kind reports (and none it does not),
// llama.cpp's slots with their reserved waste, vLLM's ranks and prefix
// caches, what a kind cannot tell, the link's freshness and the faults.
#include <algorithm>

#include <QtTest>

#include "tests/ui/remote_samples.h"
#include "ui/server/server_view_model.h"

using namespace kvscope;
using namespace kvscope::ui;

namespace {

const FigureText* figure(const std::vector<FigureText>& rows, const std::string& label) {
    const auto it = std::ranges::find(rows, label, &FigureText::label);
    return it == rows.end() ? nullptr : &*it;
}

QString value(const std::vector<FigureText>& rows, const std::string& label) {
    const FigureText* row = figure(rows, label);
    return row ? QString::fromStdString(row->value) : QStringLiteral("<no row %1>").arg(QString::fromStdString(label));
}

bool mentions(const std::vector<std::string>& lines, const char* words) {
    return std::ranges::any_of(lines,
                               [words](const std::string& line) { return line.find(words) != std::string::npos; });
}

} // namespace

class TestServerViewModel : public QObject {
    Q_OBJECT

private slots:
    // Each slot is a row of its n_ctx; what it does not hold is reserved
    // waste, summed over the slots as kvscope's contiguous mode counts it.
    void llamaCppSlotsAndTheirReservedWaste() {
        const ServerView view = server_view(test::llamaCppSample());
        QCOMPARE(view.title, std::string("llama.cpp server at http://127.0.0.1:8080"));
        QCOMPARE(view.slot_rows.size(), std::size_t{2});
        const SlotRow& busy = view.slot_rows[0];
        QCOMPARE(busy.n_ctx, 512u);
        QCOMPARE(busy.tokens, 100u);
        QCOMPARE(busy.reserved_free, 412u);
        QVERIFY(busy.busy);
        QCOMPARE(busy.text, std::string("Slot 0 · busy · 100 of 512 tokens (prompt 90, decoded 10)"));
        QCOMPARE(view.slot_rows[1].reserved_free, 512u);
        QVERIFY(!view.slot_rows[1].busy);
        QCOMPARE(view.slot_summary,
                 std::string("2 slots (1 busy) reserve 1,024 tokens: 100 held, 924 reserved but unused "
                             "(90.2% reserved waste)"));
    }

    // A model with window layers: llama.cpp's two caches, the full one at
    // the slots' capacity (1,024 tokens), the window one by what it keeps
    // (its size is not reported).
    void llamaCppWindowModelShowsBothCaches() {
        attach::RemoteSample s = test::llamaCppSample();
        s.llama_kv_caches = {{0, 4, 8192}, {512, 22, 45056}};
        const ServerView view = server_view(s);
        QCOMPARE(value(view.figures, "Full-attention cache"),
                 QStringLiteral("4 layers · 8.0 KiB per token · 8.0 MiB at 1,024 tokens"));
        QCOMPARE(value(view.figures, "Sliding-window cache (512 tokens)"),
                 QStringLiteral("22 layers · 44.0 KiB per token · keeps each sequence's last 512 tokens and one "
                                "ubatch (-ub); size not reported"));
        QVERIFY(!figure(server_view(test::llamaCppSample()).figures, "Full-attention cache")); // no windows
    }

    void llamaCppFiguresInTokensAndBytes() {
        const ServerView view = server_view(test::llamaCppSample());
        QCOMPARE(value(view.figures, "KV tokens"), QStringLiteral("100 of 1,024"));
        QCOMPARE(value(view.figures, "KV bytes"), QStringLiteral("100.0 KiB of 1.0 MiB (1.0 KiB per token)"));
        QCOMPARE(value(view.figures, "KV dtype"), QStringLiteral("q8_0"));
        // q8_0 is 8.5 bits a value: the 1 MiB pool would be 16/8.5 MiB in f16.
        QCOMPARE(value(view.figures, "Saved vs f16"), QStringLiteral("903.5 KiB (46.9%)"));
        QCOMPARE(value(view.figures, "Requests"), QStringLiteral("1 processing · 0 deferred"));
        QCOMPARE(value(view.figures, "Tokens/s"), QStringLiteral("prompt ? · generation 42.5"));
        // Not reported by llama.cpp: no row, and the view says why.
        QVERIFY(!figure(view.figures, "KV blocks"));
        QVERIFY(!figure(view.figures, "Preemptions"));
        QVERIFY(!figure(view.figures, kServerTtftLabel));
        QVERIFY(mentions(view.cannot_tell, "No block map"));
        QVERIFY(mentions(view.cannot_tell, "No preemptions"));
        QVERIFY(!view.has_engine);
    }

    // Per rank and summed; fp8 saves half of f16's bytes, but vLLM reports
    // neither tokens held nor bytes, so neither is drawn.
    void vllmRanksAndPrefixCache() {
        const ServerView view = server_view(test::vllmSample());
        QCOMPARE(view.title, std::string("vLLM server at http://10.0.0.1:8000"));
        QCOMPARE(value(view.figures, "KV blocks"), QStringLiteral("2,000 in all (16 tokens each)"));
        QCOMPARE(value(view.figures, "KV tokens"), QStringLiteral("32,000 capacity"));
        QVERIFY(!figure(view.figures, "KV bytes"));
        QCOMPARE(value(view.figures, "Saved vs f16"),
                 QStringLiteral("50.0% of the KV bytes (pool bytes not reported)"));
        QCOMPARE(value(view.figures, "Requests"), QStringLiteral("6 running · 2 waiting"));
        QCOMPARE(value(view.figures, "Preemptions"), QStringLiteral("4"));
        QCOMPARE(value(view.figures, "Prefix hit rate"), QStringLiteral("25.0%"));
        QCOMPARE(value(view.figures, kServerTtftLabel), QStringLiteral("p50 12.0 ms · p99 \u2014"));
        QVERIFY(view.slot_rows.empty());
        QVERIFY(view.slot_summary.empty());

        QCOMPARE(view.ranks.size(), std::size_t{2});
        QCOMPARE(view.ranks[0].title, std::string("Rank 0 · tcp://10.0.0.1:5557"));
        QCOMPARE(value(view.ranks[0].figures, "KV usage"), QStringLiteral("50.0%"));
        QVERIFY(view.ranks[0].prefix_cache);
        const PrefixCacheView& cache = *view.ranks[0].prefix_cache;
        QCOMPARE(cache.chain_lengths, (std::vector<std::uint32_t>{5, 3, 1}));
        QCOMPARE(value(cache.figures, "Prefix chains"), QStringLiteral("3 (longest 5 blocks)"));
        QCOMPARE(value(cache.figures, "Batches"), QStringLiteral("7 received · 2 replayed · 1 lost"));
        QCOMPARE(value(cache.figures, "Group 0 · full attention"),
                 QStringLiteral("5 cached blocks · 1 chains (longest 5 blocks)"));
        QCOMPARE(value(cache.figures, "Group 1 · sliding window 512"),
                 QStringLiteral("4 cached blocks · 2 chains (longest 3 blocks)"));
        QCOMPARE(view.ranks[1].title, std::string("Rank 1"));
        QVERIFY(!view.ranks[1].prefix_cache);
        QVERIFY(view.ranks[1].note.find("no KV-events endpoint") != std::string::npos);
        QVERIFY(view.ranks[0].note.empty());
        QVERIFY(mentions(view.cannot_tell, "never by physical block id"));
    }

    // The server's own TTFT heads the figures; the requests it ended as it
    // counts them: "—" for a count it does not keep (vLLM without an
    // "error" reason), no row for a server that keeps none (llama.cpp).
    void serverTtftFirstAndEndedRequestsAsCounted() {
        attach::RemoteSample s = test::kvscopeSample();
        s.total.ttft.p50_ms = 17.2;
        s.total.ttft.p99_ms = 222.0;
        s.total.requests_completed = 215;
        s.total.requests_aborted = 4793;
        s.total.requests_failed = 1;
        const ServerView view = server_view(s);
        QCOMPARE(view.figures.front().label, std::string(kServerTtftLabel));
        QCOMPARE(value(view.figures, kServerTtftLabel), QStringLiteral("p50 17.2 ms · p99 222.0 ms"));
        QCOMPARE(value(view.figures, kRequestsEndedLabel), QStringLiteral("completed 215 · aborted 4,793 · failed 1"));
        QVERIFY(!figure(server_view(test::llamaCppSample()).figures, kRequestsEndedLabel));
        attach::RemoteSample vllm = test::vllmSample();
        vllm.total.requests_completed = 90;
        vllm.total.requests_aborted = 3;
        QCOMPARE(value(server_view(vllm).figures, kRequestsEndedLabel),
                 QStringLiteral("completed 90 · aborted 3 · failed \u2014"));
    }

    void kvscopeHandsItsEngineToTheDashboards() {
        const ServerView view = server_view(test::kvscopeSample());
        QVERIFY(view.has_engine);
        QVERIFY(view.cannot_tell.empty());
        QCOMPARE(value(view.figures, "KV blocks"), QStringLiteral("2 of 8 (4 tokens each)"));
        // Its dtype costs are the KV quantization dashboard's, from the exact layout.
        QVERIFY(!figure(view.figures, "Saved vs f16"));
    }

    void freshnessSaysTheLinkState() {
        attach::RemoteSample s = test::llamaCppSample();
        QCOMPARE(server_view(s).freshness, std::string("Live · data 0.4 s old"));
        QVERIFY(server_view(s).stale.empty());
        s.link = attach::LinkState::Reconnecting;
        s.reconnects = 3;
        s.failed_polls = 5;
        s.retry_in_s = 4.0;
        s.data_age_s = 12.04;
        s.faults = {"connection refused", "counters reset (server restarted)"};
        const ServerView away = server_view(s);
        // The attempts count while the server is down, and the backoff says when the next comes.
        QCOMPARE(away.freshness, std::string("Reconnecting: 5 attempts so far, retrying every 4 s · data 12.0 s old"));
        QCOMPARE(away.faults, s.faults);
        QCOMPARE(away.stale, std::string("Last figures, as of 12 s ago: the server is not answering"));
        // Between samples the panel adds the seconds since this one.
        QCOMPARE(server_view(s, 3.0).stale, std::string("Last figures, as of 15 s ago: the server is not answering"));
        s.failed_polls = 1;
        s.retry_in_s = 0.5;
        QCOMPARE(server_view(s).freshness, std::string("Reconnecting: 1 attempt so far, retrying every 0.5 s · data 12.0 s old"));
        s.link = attach::LinkState::Live;
        s.failed_polls = 0;
        s.retry_in_s.reset();
        s.data_age_s = 0.5;
        QCOMPARE(server_view(s).freshness, std::string("Live (reconnected 3 times) · data 0.5 s old"));
        QVERIFY(server_view(s).stale.empty());
        // The last figures stay while the server is away.
        QCOMPARE(value(away.figures, "KV tokens"), QStringLiteral("100 of 1,024"));

        attach::RemoteSample first;
        first.url = "http://127.0.0.1:9";
        const ServerView connecting = server_view(first);
        QCOMPARE(connecting.title, std::string("Connecting to http://127.0.0.1:9"));
        QCOMPARE(connecting.freshness, std::string("Connecting · no data yet"));
        QCOMPARE(connecting.model, std::string("Model: not known yet"));
        QVERIFY(connecting.figures.empty());
        first.link = attach::LinkState::Reconnecting;
        first.reconnects = 1;
        QCOMPARE(server_view(first).title, std::string("No answer yet from http://127.0.0.1:9"));
        QVERIFY(server_view(first).stale.empty()); // no figures to be stale
        attach::RemoteSample never;
        never.failed_polls = 2;
        never.retry_in_s = 1.0;
        QCOMPARE(server_view(never).freshness,
                 std::string("Connecting: no answer, 2 attempts so far, retrying every 1 s · no data yet"));
    }

    void unknownDtypeIsNamedNotSized() {
        attach::RemoteSample s = test::vllmSample();
        s.total.kv_dtype = "fp6_weird";
        const ServerView view = server_view(s);
        QCOMPARE(value(view.figures, "KV dtype"), QStringLiteral("fp6_weird (its size is not known here)"));
        QVERIFY(!figure(view.figures, "Saved vs f16"));
    }
};

QTEST_MAIN(TestServerViewModel)
#include "test_server_view_model.moc"
