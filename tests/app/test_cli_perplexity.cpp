// kvscope-cli perplexity on stories260K and tests/data/tiny_story.txt, as a
// user runs it: the JSON the README documents, and clear errors.
#include <QtTest>

#include <QJsonArray>
#include <QTemporaryDir>

#include "cli_runner.h"
#include "support/test_models.h"

using kvscope::test::run_cli;

namespace {

const QString kStory = QStringLiteral(KVSCOPE_TEST_DATA "/tiny_story.txt");

} // namespace

class TestCliPerplexity : public QObject {
    Q_OBJECT
private slots:
    void json_rows_for_the_requested_dtypes();
    void table_by_default();
    void errors_are_clear_data();
    void errors_are_clear();
    void empty_text_is_an_error();
};

void TestCliPerplexity::json_rows_for_the_requested_dtypes() {
    KVSCOPE_REQUIRE_MODEL(path, "stories260K-f32.gguf");
    // 96-token windows keep the run short and exercise windowing.
    const auto r = run_cli({"--log-level", "warn", "perplexity", "--model", path, "--text-file", kStory,
                            "--kv-dtype", "f16", "--ctx", "96", "--backend", "cpu", "--json"});
    QCOMPARE(r.exit_code, 0);
    const QJsonObject j = r.json();
    QCOMPARE(j["context"].toInt(), 96);
    QVERIFY(j["windows"].toInt() > 1);
    QCOMPARE(j["scored_tokens"].toInt(), j["tokens"].toInt() - 1);
    const QJsonArray rows = j["rows"].toArray();
    QCOMPARE(rows.size(), 2); // the f32 baseline is always there
    for (const QJsonValue& v : rows)
    {
        for (const char* key : {"kv_dtype", "bytes_per_token", "saving_vs_f16", "perplexity", "delta_pct", "kld",
                                "top1_agreement", "backend"})
            QVERIFY2(v.toObject().contains(key), key);
        QCOMPARE(v.toObject()["backend"].toString(), QStringLiteral("cpu"));
    }
    const QJsonObject f32 = rows[0].toObject(), f16 = rows[1].toObject();
    QCOMPARE(f32["kv_dtype"].toString(), QStringLiteral("f32"));
    QCOMPARE(f16["kv_dtype"].toString(), QStringLiteral("f16"));
    // stories260K: 5 layers x 4 KV heads x 8 dims x (K, V); 96 tokens are 6 whole blocks.
    QCOMPARE(f32["bytes_per_token"].toDouble(), 1280.0);
    QCOMPARE(f16["bytes_per_token"].toDouble(), 640.0);
    QCOMPARE(f32["saving_vs_f16"].toDouble(), 0.5);
    QCOMPARE(f16["saving_vs_f16"].toDouble(), 1.0);
    QCOMPARE(f32["delta_pct"].toDouble(), 0.0);
    QCOMPARE(f32["kld"].toDouble(), 0.0);
    QCOMPARE(f32["top1_agreement"].toDouble(), 1.0);
    QVERIFY(f32["perplexity"].toDouble() > 1);
    QVERIFY(std::abs(f16["delta_pct"].toDouble()) <= 0.1);
}

void TestCliPerplexity::table_by_default() {
    KVSCOPE_REQUIRE_MODEL(path, "stories260K-f32.gguf");
    const auto r = run_cli({"--log-level", "warn", "perplexity", "--model", path, "--text-file", kStory, "--ctx",
                            "64"});
    QCOMPARE(r.exit_code, 0);
    // Every dtype this build runs, f32 and f16 at least, one line each.
    QVERIFY(r.out.contains("perplexity"));
    QVERIFY(r.out.contains("\n  f32 "));
    QVERIFY(r.out.contains("\n  f16 "));
}

void TestCliPerplexity::errors_are_clear_data() {
    QTest::addColumn<QStringList>("extra");
    QTest::addColumn<QString>("message");
    QTest::newRow("missing file") << QStringList{"--text-file", "/nonexistent/story.txt"}
                                  << "cannot open the text file";
    QTest::newRow("no text file") << QStringList{} << "--text-file";
    QTest::newRow("unknown dtype") << QStringList{"--text-file", kStory, "--kv-dtype", "f16,int3"}
                                   << "unknown KV dtype 'int3'";
    QTest::newRow("window too small") << QStringList{"--text-file", kStory, "--ctx", "1"} << "--ctx";
    QTest::newRow("window above context") << QStringList{"--text-file", kStory, "--ctx", "4096"}
                                          << "exceeds the model's context";
    QTest::newRow("unknown backend") << QStringList{"--text-file", kStory, "--backend", "tpu"}
                                     << "unknown backend 'tpu'";
}

void TestCliPerplexity::errors_are_clear() {
    QFETCH(QStringList, extra);
    QFETCH(QString, message);
    KVSCOPE_REQUIRE_MODEL(path, "stories260K-f32.gguf");
    const auto r = run_cli(QStringList{"perplexity", "--model", path} + extra);
    QCOMPARE(r.exit_code, 1);
    QVERIFY2(r.err.contains(message.toUtf8()), r.err.constData());
}

void TestCliPerplexity::empty_text_is_an_error() {
    KVSCOPE_REQUIRE_MODEL(path, "stories260K-f32.gguf");
    QTemporaryDir dir;
    const QString empty = dir.filePath(QStringLiteral("empty.txt"));
    QFile f(empty);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.close();
    const auto r = run_cli({"perplexity", "--model", path, "--text-file", empty});
    QCOMPARE(r.exit_code, 1);
    QVERIFY2(r.err.contains("is empty"), r.err.constData());
}

QTEST_GUILESS_MAIN(TestCliPerplexity)
#include "test_cli_perplexity.moc"
