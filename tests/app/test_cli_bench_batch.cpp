// kvscope-cli bench batch on stories260K, as a user runs it: one row per
// (PP, TG, B) in llama-batched-bench's order, its columns derived from the
// times as llama-batched-bench derives them, the text table's header, and
// bad options refused with a message saying what to change. Times are only
// checked for being positive and consistent, never for their size.
#include <QtTest>

#include <QJsonArray>

#include <algorithm>
#include <cmath>

#include "cli_runner.h"
#include "support/test_models.h"

using kvscope::test::run_cli;

class TestCliBenchBatch : public QObject {
    Q_OBJECT
private slots:
    void json_rows();
    void text_table();
    void pool_counts_the_last_sampled_token();
    void chunked_prompts_still_run();
    void bad_options_fail_with_a_message_data();
    void bad_options_fail_with_a_message();
};

namespace {

bool close(double a, double b) { return std::abs(a - b) <= 1e-9 * std::max(std::abs(a), std::abs(b)); }

QStringList bench(const QString& model, const QStringList& options) {
    return QStringList{"--log-level", "warn", "bench", "batch", "--model", model} + options;
}

} // namespace

void TestCliBenchBatch::json_rows() {
    KVSCOPE_REQUIRE_MODEL(path, "stories260K-q8_0.gguf");
    const auto r = run_cli(bench(path, {"-npp", "8,16", "-ntg", "4", "-npl", "1,3", "--json"}));
    QCOMPARE(r.exit_code, 0);
    const QJsonArray rows = r.json()["rows"].toArray();
    QCOMPARE(rows.size(), 4);
    const int pp[] = {8, 8, 16, 16}, b[] = {1, 3, 1, 3}; // B varies fastest, as in llama-batched-bench
    for (int i = 0; i < 4; ++i) {
        const QJsonObject row = rows[i].toObject();
        QCOMPARE(row.keys().size(), 10);
        QCOMPARE(row["PP"].toInt(), pp[i]);
        QCOMPARE(row["TG"].toInt(), 4);
        QCOMPARE(row["B"].toInt(), b[i]);
        QCOMPARE(row["N_KV"].toInt(), b[i] * (pp[i] + 4));
        const double t_pp = row["T_PP"].toDouble(), t_tg = row["T_TG"].toDouble();
        QVERIFY(t_pp > 0 && t_tg > 0);
        QVERIFY(close(row["S_PP"].toDouble(), b[i] * pp[i] / t_pp));
        QVERIFY(close(row["S_TG"].toDouble(), b[i] * 4 / t_tg));
        QVERIFY(close(row["T"].toDouble(), t_pp + t_tg));
        QVERIFY(close(row["S"].toDouble(), b[i] * (pp[i] + 4) / (t_pp + t_tg)));
    }
}

void TestCliBenchBatch::text_table() {
    KVSCOPE_REQUIRE_MODEL(path, "stories260K-q8_0.gguf");
    // llama-batched-bench's spellings with two dashes work too.
    const auto r = run_cli(bench(path, {"--npp", "12", "--ntg", "4", "--npl", "1,2"}));
    QCOMPARE(r.exit_code, 0);
    const QString out = QString::fromUtf8(r.out);
    QVERIFY2(out.contains(QRegularExpression(R"(\|\s*PP \|\s*TG \|\s*B \|\s*N_KV \|\s*T_PP s \|\s*S_PP t/s \|)"
                                             R"(\s*T_TG s \|\s*S_TG t/s \|\s*T s \|\s*S t/s \|)")),
             r.out.constData());
    QVERIFY(out.contains(QRegularExpression(R"(\|\s*12 \|\s*4 \|\s*1 \|\s*16 \|)")));
    QVERIFY(out.contains(QRegularExpression(R"(\|\s*12 \|\s*4 \|\s*2 \|\s*32 \|)")));
    QVERIFY(out.contains(QRegularExpression(R"(PP 12, TG 4, B 2: [0-9.]+ ms)")));
    QVERIFY2(out.contains(QRegularExpression(R"(decode step, B sequences / 1 sequence \(PP 12, TG 4\): 2: [0-9.]+x)")),
             r.out.constData());
    QVERIFY(!out.contains("prompts took")); // the default token budget takes both prompts in one step
}

void TestCliBenchBatch::pool_counts_the_last_sampled_token() {
    // PP + TG = 16 fills one block exactly, but the engine admits a request
    // only with room for every token it may sample (TG + 1): one sequence
    // alone must still get a pool it fits in.
    KVSCOPE_REQUIRE_MODEL(path, "stories260K-q8_0.gguf");
    const auto r = run_cli(bench(path, {"-npp", "12", "-ntg", "4", "-npl", "1", "--json"}));
    QVERIFY2(r.exit_code == 0, r.err.constData());
}

void TestCliBenchBatch::chunked_prompts_still_run() {
    KVSCOPE_REQUIRE_MODEL(path, "stories260K-q8_0.gguf");
    // A token budget below B*PP splits the prompts over steps; the text says so.
    const auto r = run_cli(bench(path, {"-npp", "16", "-ntg", "4", "-npl", "2", "--max-batched-tokens", "8"}));
    QCOMPARE(r.exit_code, 0);
    QVERIFY2(QString::fromUtf8(r.out).contains("PP 16, TG 4, B 2: "), r.out.constData());
    QVERIFY(QString::fromUtf8(r.out).contains("prompts took ")); // printed only for more than one step
}

void TestCliBenchBatch::bad_options_fail_with_a_message_data() {
    QTest::addColumn<QStringList>("options");
    QTest::addColumn<QString>("message");
    QTest::newRow("no -npp") << QStringList{"-ntg", "4", "-npl", "1"} << "-npp N[,N...] is required";
    QTest::newRow("-npl 0") << QStringList{"-npp", "8", "-ntg", "4", "-npl", "1,0"} << "-npl takes numbers 1..";
    QTest::newRow("both spellings") << QStringList{"-npp", "8", "--npp", "8", "-ntg", "4", "-npl", "1"}
                                    << "-npp and --npp both given";
    // stories260K's context is 512 tokens.
    QTest::newRow("beyond the context") << QStringList{"-npp", "500", "-ntg", "20", "-npl", "1"}
                                        << "exceed the model's context of 512 tokens: lower -npp or -ntg";
    // A 16-token f16 block is 10240 bytes: 0.05 MiB holds 5, the row needs 4 x 2.
    QTest::newRow("beyond the pool") << QStringList{"-npp", "16", "-ntg", "8", "-npl", "4", "--kv-budget-mib", "0.05"}
                                     << "needs 8 KV blocks of 16 tokens (N_KV = 96), the KV pool holds 5: lower -npl";
}

void TestCliBenchBatch::bad_options_fail_with_a_message() {
    KVSCOPE_REQUIRE_MODEL(path, "stories260K-q8_0.gguf");
    QFETCH(QStringList, options);
    QFETCH(QString, message);
    const auto r = run_cli(bench(path, options));
    QCOMPARE(r.exit_code, 1);
    QVERIFY2(QString::fromUtf8(r.err).contains(message), r.err.constData());
    QVERIFY(r.out.isEmpty());
}

QTEST_GUILESS_MAIN(TestCliBenchBatch)
#include "test_cli_bench_batch.moc"
