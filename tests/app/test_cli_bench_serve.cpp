// kvscope-cli bench serve on stories260K, as a user runs it: the JSON the
// README documents, every request completed in both modes.
#include <QtTest>

#include <QJsonArray>

#include "cli_runner.h"
#include "support/test_models.h"

using kvscope::test::run_cli;

class TestCliBenchServe : public QObject {
    Q_OBJECT
private slots:
    void both_modes_side_by_side();
};

void TestCliBenchServe::both_modes_side_by_side() {
    KVSCOPE_REQUIRE_MODEL(path, "stories260K-f32.gguf");
    // 640 bytes per f16 token: 0.25 MiB holds 25 blocks of 16 tokens.
    const auto r = run_cli({"--log-level", "warn", "bench", "serve", "--model", path, "--requests", "12",
                            "--kv-budget-mib", "0.25", "--max-total", "128", "--mode", "both", "--json"});
    QCOMPARE(r.exit_code, 0);
    const QJsonObject j = r.json();
    const QJsonArray runs = j["runs"].toArray();
    QCOMPARE(runs.size(), 2);
    QCOMPARE(runs[0].toObject()["mode"].toString(), QStringLiteral("paged"));
    QCOMPARE(runs[1].toObject()["mode"].toString(), QStringLiteral("contiguous"));
    for (const QJsonValue& v : runs) {
        const QJsonObject run = v.toObject();
        QCOMPARE(run["completed"].toInt(), 12);
        for (const char* key : {"kv_dtype", "block_size", "generation_tokens_per_second", "total_tokens_per_second",
                                "mean_running_seqs", "peak_running_seqs", "token_occupancy_pct", "internal_waste_pct",
                                "reserved_waste_pct", "external_fragmentation_pct", "preemptions", "ttft_p50_ms",
                                "ttft_p95_ms"})
            QVERIFY2(run.contains(key), key);
    }
    // Paging has no reservations, contiguous allocation does.
    QCOMPARE(runs[0].toObject()["reserved_waste_pct"].toDouble(), 0.0);
    QVERIFY(runs[1].toObject()["reserved_waste_pct"].toDouble() > 0.0);
    QVERIFY(j["ratios"].toObject().contains("throughput"));
    QVERIFY(j["ratios"].toObject()["concurrency"].toDouble() > 1.0);
}

QTEST_GUILESS_MAIN(TestCliBenchServe)
#include "test_cli_bench_serve.moc"
