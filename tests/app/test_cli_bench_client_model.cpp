// kvscope-cli bench client against a real kvscope-cli serve on a loopback
// port, both run as a user runs them (the client alone, against a mock
// server, is tests/net/client/test_bench_client; its errors without a
// server, test_cli_bench_client). Needs the shared models folder (label
// model).
#include <QtTest>

#include <QRegularExpression>

#include "cli_runner.h"
#include "support/test_models.h"

using kvscope::test::run_cli;

namespace {

// kvscope-cli serve on a free port; the URL from its first line.
class ServeProcess {
public:
    explicit ServeProcess(const QString& model, const QStringList& extra = {}) {
        process_.start(QStringLiteral(KVSCOPE_CLI),
                       QStringList{"--log-level", "warn", "serve", "--model", model, "--port", "0"} + extra);
        for (int waited = 0; url_.isEmpty() && waited < 60 && process_.state() != QProcess::NotRunning; ++waited) {
            process_.waitForReadyRead(1000);
            const auto m = QRegularExpression("http://[0-9.]+:[0-9]+").match(QString::fromUtf8(process_.peek(4096)));
            if (m.hasMatch())
                url_ = m.captured();
        }
    }
    ~ServeProcess() {
        process_.terminate(); // SIGTERM: the server drains and exits
        if (!process_.waitForFinished(15000))
            process_.kill();
    }
    const QString& url() const { return url_; }

private:
    QProcess process_;
    QString url_;
};

} // namespace

class TestCliBenchClientModel : public QObject {
    Q_OBJECT
private slots:
    void measures_a_kvscope_server() {
        KVSCOPE_REQUIRE_MODEL(path, "stories260K-f32.gguf");
        ServeProcess server(path);
        QVERIFY2(!server.url().isEmpty(), "kvscope-cli serve printed no URL");
        // Fixed lengths, so the totals are known: 12 prompts of a BOS and 20
        // ids, 10 new tokens each (ignore_eos).
        const auto r = run_cli({"bench", "client", "--url", server.url(), "--requests", "12", "--concurrency", "4",
                                "--lengths", "fixed", "--prompt-len", "20", "--output-len", "10", "--json"});
        QCOMPARE(r.exit_code, 0);
        const QJsonObject j = r.json();
        QVERIFY2(j["failed"].toInt() == 0, qPrintable(j["first_error"].toString()));
        QCOMPARE(j["completed"].toInt(), 12);
        QCOMPARE(j["output_tokens"].toInt(), 120);
        QCOMPARE(j["prompt_tokens"].toInt(), 12 * 21);
        QCOMPARE(j["model"].toString(), QStringLiteral("stories260K-f32"));
        QCOMPARE(j["workload"].toObject()["vocab"].toInt(), 512); // the server's meta.n_vocab
        QVERIFY(j["output_tokens_per_second"].toDouble() > 0);
        const QJsonObject ttft = j["ttft_ms"].toObject();
        QVERIFY(ttft["p50"].toDouble() <= ttft["p90"].toDouble() && ttft["p90"].toDouble() <= ttft["p99"].toDouble());
        QVERIFY(j["itl_ms"].toObject()["p99"].toDouble() > 0); // ten tokens streamed one by one
    }

    void needs_the_servers_api_key() {
        KVSCOPE_REQUIRE_MODEL(path, "stories260K-f32.gguf");
        ServeProcess server(path, {"--api-key", "sesame"});
        QVERIFY(!server.url().isEmpty());
        const QStringList run{"bench", "client", "--url", server.url(), "--requests", "2", "--lengths", "fixed",
                              "--prompt-len", "8", "--output-len", "4"};
        const auto refused = run_cli(run);
        QCOMPARE(refused.exit_code, 1);
        QVERIFY2(refused.err.contains("--api-key"), refused.err.constData());
        const auto r = run_cli(run + QStringList{"--api-key", "sesame", "--json"});
        QCOMPARE(r.exit_code, 0);
        QCOMPARE(r.json()["completed"].toInt(), 2);
    }
};

QTEST_GUILESS_MAIN(TestCliBenchClientModel)
#include "test_cli_bench_client_model.moc"
