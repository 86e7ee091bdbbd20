// kvscope-cli bench attention, tiny, as a user runs it: the JSON the README
// documents, a paged and a contiguous row for every (dtype, context), and
// bytes that follow from KvLayout. Timings are only checked to be positive.
#include <QtTest>

#include <QJsonArray>

#include "cli_runner.h"

using kvscope::test::run_cli;

class TestCliBenchAttention : public QObject {
    Q_OBJECT
private slots:
    void paged_and_contiguous_rows();
    void rejects_bad_contexts_and_heads();
    void times_prompt_chunks();
};

void TestCliBenchAttention::paged_and_contiguous_rows() {
    const auto r = run_cli({"bench", "attention", "--context", "40,64", "--kv-dtype", "f16,int8,int4-kivi", "--heads",
                            "4", "--kv-heads", "2", "--head-dim", "64", "--block-size", "16", "--repeats", "1",
                            "--threads", "1", "--json"});
    QCOMPARE(r.exit_code, 0);
    const QJsonArray rows = r.json()["rows"].toArray();
    QCOMPARE(rows.size(), 3 * 2 * 2);
    const char* dtypes[] = {"f16", "int8", "int4-kivi"};
    for (int i = 0; i < rows.size(); ++i) {
        const QJsonObject row = rows[i].toObject();
        QCOMPARE(row["kv_dtype"].toString(), QString(dtypes[i / 4]));
        QCOMPARE(row["context"].toInt(), (i / 2) % 2 == 0 ? 40 : 64);
        QCOMPARE(row["layout"].toString(), QString(i % 2 == 0 ? "paged" : "contiguous"));
        QVERIFY(row["seconds_per_call"].toDouble() > 0);
        QVERIFY(row["gb_per_s"].toDouble() > 0);
    }
    // f16, 64 tokens: 4 whole blocks of 2 heads x 16 slots x 64 values x 2 B x {K, V}.
    QCOMPARE(rows[2].toObject()["bytes_per_call"].toDouble(), 4.0 * 2 * 16 * 64 * 2 * 2);
    // int8, 40 tokens: 2 blocks + 8 tokens of (64 + 2) B per row, 2 heads x {K, V}.
    QCOMPARE(rows[4].toObject()["bytes_per_call"].toDouble(), 40.0 * 2 * 2 * (64 + 2));
    // int4-kivi, 40 tokens: 2 sealed blocks of 2 heads x (512 + 256 + 512 + 128) B,
    // then 8 tokens read from the f16 tail: 8 x 2 heads x 64 x 2 B x {K, V}.
    QCOMPARE(rows[8].toObject()["bytes_per_call"].toDouble(), 2.0 * 2 * (512 + 256 + 512 + 128) + 8 * 2 * 64 * 2 * 2);
}

void TestCliBenchAttention::rejects_bad_contexts_and_heads() {
    const auto bad_context = run_cli({"bench", "attention", "--context", "512,x"});
    QCOMPARE(bad_context.exit_code, 1);
    QVERIFY(bad_context.err.contains("--context"));
    const auto bad_heads = run_cli({"bench", "attention", "--heads", "6", "--kv-heads", "4"});
    QCOMPARE(bad_heads.exit_code, 1);
    QVERIFY(bad_heads.err.contains("multiple"));
}

// --queries: a prompt chunk of the context's last tokens; tokens/s counts
// the queries; a context shorter than the chunk is refused.
void TestCliBenchAttention::times_prompt_chunks() {
    const auto r = run_cli({"bench", "attention", "--context", "48", "--queries", "40", "--kv-dtype", "int8", "--heads",
                            "4", "--kv-heads", "2", "--head-dim", "64", "--repeats", "1", "--threads", "1", "--json"});
    QCOMPARE(r.exit_code, 0);
    QCOMPARE(r.json()["queries"].toInt(), 40);
    const QJsonObject row = r.json()["rows"].toArray()[0].toObject();
    QVERIFY(qAbs(row["tokens_per_s"].toDouble() * row["seconds_per_call"].toDouble() - 40) < 1e-6);
    const auto too_short = run_cli({"bench", "attention", "--context", "48", "--queries", "49"});
    QCOMPARE(too_short.exit_code, 1);
    QVERIFY(too_short.err.contains("--queries"));
}

QTEST_APPLESS_MAIN(TestCliBenchAttention)
#include "test_cli_bench_attention.moc"
