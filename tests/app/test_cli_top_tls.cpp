// `kvscope-cli top https://HOST:PORT` against a vLLM-shaped server behind
// TLS on loopback (tests/net/attach/tls_vllm_server.h), its certificate made
// at test time and trusted through KVSCOPE_CA_FILE. (An unknown
// certificate refused: tests/net/attach/test_remote_monitor_tls, which need
// not wait out --once's 10 s.)
#include <QProcessEnvironment>
#include <QTemporaryDir>
#include <QtTest>

#include "cli_runner.h"
#include "net/attach/tls_vllm_server.h"

using kvscope::test::CliResult;

class TestCliTopTls : public QObject {
    Q_OBJECT

    QTemporaryDir temp_;
    kvscope::test::TestCertificate cert_;

    CliResult top(const std::string& url, const QString& ca_file) const {
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.remove(QStringLiteral("SSL_CERT_FILE"));
        env.remove(QStringLiteral("KVSCOPE_CA_FILE"));
        if (!ca_file.isEmpty())
            env.insert(QStringLiteral("KVSCOPE_CA_FILE"), ca_file);
        QProcess p;
        p.setProcessEnvironment(env);
        p.start(QStringLiteral(KVSCOPE_CLI), {"top", QString::fromStdString(url), "--once", "--json"});
        p.waitForFinished(60000);
        return {p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1, p.readAllStandardOutput(),
                p.readAllStandardError()};
    }

private slots:
    void initTestCase() {
        QString error;
        cert_ = kvscope::test::make_test_certificate(temp_.path(), &error);
        QVERIFY2(!cert_.cert.isEmpty(), qPrintable(error));
    }

    void https_server_with_a_trusted_certificate() {
        const kvscope::test::TlsVllmServer server(cert_);
        QVERIFY(server.valid());
        const CliResult r = top(server.url(), cert_.cert);
        QVERIFY2(r.exit_code == 0, r.err.constData());
        QCOMPARE(r.json()["kind"].toString(), QStringLiteral("vllm"));
        QCOMPARE(r.json()["model"].toString(), QStringLiteral("tls-model"));
    }
};

QTEST_GUILESS_MAIN(TestCliTopTls)
#include "test_cli_top_tls.moc"
