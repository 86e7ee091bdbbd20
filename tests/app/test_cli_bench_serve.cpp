// kvscope-cli bench serve on stories260K, as a user runs it: the JSON the
// README documents, every request completed in both modes, and several KV
// dtypes in the same budget against f16.
#include <QtTest>

#include <QJsonArray>

#include <algorithm>

#include "cli_runner.h"
#include "support/test_models.h"

using kvscope::test::run_cli;

class TestCliBenchServe : public QObject {
    Q_OBJECT
private slots:
    void both_modes_side_by_side();
    void oracle_lengths_shrink_contiguous_reservations();
    void kv_dtypes_side_by_side();
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
                                "reserved_waste_pct", "external_fragmentation_pct", "preemptions",
                                "prefix_hit_tokens", "ttft_p50_ms", "ttft_p95_ms"})
            QVERIFY2(run.contains(key), key);
    }
    QCOMPARE(j["workload"].toObject()["oracle_lengths"].toBool(), false);
    // Paging has no reservations, contiguous allocation does.
    QCOMPARE(runs[0].toObject()["reserved_waste_pct"].toDouble(), 0.0);
    QVERIFY(runs[1].toObject()["reserved_waste_pct"].toDouble() > 0.0);
    // Paging fits more sequences at once (the peak: time-weighted means
    // move with the machine's load); the ratios are paged over contiguous.
    QVERIFY(runs[0].toObject()["peak_running_seqs"].toInt() > runs[1].toObject()["peak_running_seqs"].toInt());
    const QJsonObject ratios = j["ratios"].toObject();
    auto ratio = [&](const char* key) {
        return runs[0].toObject()[key].toDouble() / runs[1].toObject()[key].toDouble();
    };
    QVERIFY(qFuzzyCompare(ratios["throughput"].toDouble(), ratio("generation_tokens_per_second")));
    QVERIFY(qFuzzyCompare(ratios["concurrency"].toDouble(), ratio("mean_running_seqs")));
    // Where the time went: decode-only steps by batch size, which never
    // exceeds the peak, and steps with prompt tokens; all within the run.
    int largest[2] = {};
    for (int i = 0; i < 2; ++i) {
        const QJsonObject run = runs[i].toObject();
        double seconds = run["prefill_steps"].toObject()["seconds"].toDouble();
        QVERIFY(run["prefill_steps"].toObject()["steps"].toInt() >= 1);
        for (const QJsonValue& v : run["decode_steps"].toArray()) {
            const QJsonObject d = v.toObject();
            QVERIFY(d["steps"].toInt() >= 1);
            QVERIFY(d["seqs"].toInt() >= 1 && d["seqs"].toInt() <= run["peak_running_seqs"].toInt());
            largest[i] = std::max(largest[i], d["seqs"].toInt());
            seconds += d["seconds"].toDouble();
        }
        QVERIFY(seconds <= run["seconds"].toDouble());
    }
    QVERIFY(largest[0] > largest[1]); // paging decodes more sequences at once
}

void TestCliBenchServe::oracle_lengths_shrink_contiguous_reservations() {
    KVSCOPE_REQUIRE_MODEL(path, "stories260K-f32.gguf");
    // The same workload, requests asking for their exact reply length: a
    // contiguous allocator then reserves less than for the cap every real
    // client sends, so more requests fit at once. (Peak, not the
    // time-weighted means: those move with the machine's load.)
    auto run = [&](bool oracle) {
        QStringList a{"--log-level", "warn", "bench", "serve", "--model", path, "--requests", "12", "--kv-budget-mib",
                      "0.25", "--max-total", "256", "--mode", "contiguous", "--json"};
        if (oracle)
            a << "--oracle-lengths";
        const auto r = run_cli(a);
        return r.exit_code == 0 ? r.json() : QJsonObject();
    };
    const QJsonObject capped = run(false), oracle = run(true);
    QVERIFY(!capped.isEmpty() && !oracle.isEmpty());
    QCOMPARE(oracle["workload"].toObject()["oracle_lengths"].toBool(), true);
    const QJsonObject c = capped["runs"].toArray()[0].toObject(), o = oracle["runs"].toArray()[0].toObject();
    QCOMPARE(c["completed"].toInt(), 12);
    QCOMPARE(o["completed"].toInt(), 12);
    QCOMPARE(c["peak_running_seqs"].toInt(), 1);
    QVERIFY(o["peak_running_seqs"].toInt() > 1);
}

void TestCliBenchServe::kv_dtypes_side_by_side() {
    KVSCOPE_REQUIRE_MODEL(path, "stories260K-f32.gguf");
    // Per 16-token block: f16 10240 bytes, int8 6400 (f16 scale per row),
    // int4 5120 (head_dim 8 is one group: f16 scale + zero per row). In
    // 0.25 MiB: 25, 40 and 51 blocks; a 128-token sequence takes 8.
    const auto r = run_cli({"--log-level", "warn", "bench", "serve", "--model", path, "--requests", "12",
                            "--kv-budget-mib", "0.25", "--max-total", "128", "--mode", "paged", "--kv-dtype",
                            "int8,int4,f16", "--json"});
    QCOMPARE(r.exit_code, 0);
    const QJsonObject j = r.json();
    QVERIFY(!j.contains("ratios")); // one allocation mode: nothing to compare it with
    const QJsonArray runs = j["runs"].toArray();
    const QJsonArray rows = j["kv_dtypes"].toArray();
    QCOMPARE(runs.size(), 3);
    QCOMPARE(rows.size(), 3);
    const QStringList order{"f16", "int8", "int4"}; // f16 first: the reference
    const int blocks[] = {25, 40, 51};
    const int fit[] = {3, 5, 6};
    for (int i = 0; i < 3; ++i) {
        const QJsonObject run = runs[i].toObject(), row = rows[i].toObject();
        QCOMPARE(run["kv_dtype"].toString(), order[i]);
        QCOMPARE(run["completed"].toInt(), 12);
        QCOMPARE(row["kv_dtype"].toString(), order[i]);
        QCOMPARE(row["mode"].toString(), QStringLiteral("paged"));
        QCOMPARE(row["kv_blocks"].toInt(), blocks[i]);
        QCOMPARE(row["sequences_fit"].toInt(), fit[i]);
        QCOMPARE(row["blocks_vs_f16"].toDouble(), blocks[i] / 25.0);
        for (const char* key : {"bytes_per_block", "mean_running_seqs", "concurrency_vs_f16",
                                "generation_tokens_per_second", "throughput_vs_f16"})
            QVERIFY2(row.contains(key), key);
    }
    QCOMPARE(rows[0].toObject()["throughput_vs_f16"].toDouble(), 1.0);
    // More blocks, more sequences in flight at the peak (all requests arrive at once).
    QVERIFY(runs[2].toObject()["peak_running_seqs"].toInt() > runs[0].toObject()["peak_running_seqs"].toInt());
}

QTEST_GUILESS_MAIN(TestCliBenchServe)
#include "test_cli_bench_serve.moc"
