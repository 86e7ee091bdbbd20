// RemoteMonitor over HTTPS: a vLLM-shaped server behind TLS on loopback,
// with a certificate made at test time (support/test_certificate.h). With
// the certificate trusted (KVSCOPE_CA_FILE) the link goes live and the
// figures are read; with the system's store alone the certificate is
// refused and the link never goes live.
#include <QTemporaryDir>
#include <QtTest>

#include <chrono>
#include <memory>
#include <thread>

#include "net/attach/remote_monitor.h"
#include "support/test_certificate.h"
#include "support/wait.h"
#include "tls_vllm_server.h"

using namespace std::chrono_literals;
using kvscope::attach::ConnectOptions;
using kvscope::attach::LinkState;
using kvscope::attach::RemoteMonitor;
using kvscope::attach::RemoteSample;
using kvscope::attach::ServerKind;

namespace {

ConnectOptions options_for(const std::string& url) {
    ConnectOptions o;
    o.url = url;
    o.interval = 100ms;
    o.timeout = 2000ms;
    return o;
}

} // namespace

class TestRemoteMonitorTls : public QObject {
    Q_OBJECT

    QTemporaryDir temp_;
    kvscope::test::TestCertificate cert_;

private slots:
    void initTestCase() {
        QString error;
        cert_ = kvscope::test::make_test_certificate(temp_.path(), &error);
        QVERIFY2(!cert_.cert.isEmpty(), qPrintable(error));
    }

    void trusted_certificate_goes_live() {
        kvscope::test::TlsVllmServer server(cert_);
        QVERIFY(server.valid());
        qputenv("KVSCOPE_CA_FILE", cert_.cert.toLocal8Bit());
        const RemoteMonitor monitor(options_for(server.url()));
        std::shared_ptr<const RemoteSample> s;
        QVERIFY(kvscope::test::wait_until([&] {
            s = monitor.latest();
            return s->link == LinkState::Live;
        }));
        QCOMPARE(s->kind, ServerKind::Vllm);
        QCOMPARE(s->model, std::optional<std::string>("tls-model"));
        qunsetenv("KVSCOPE_CA_FILE");
    }

    void unknown_certificate_is_refused() {
        kvscope::test::TlsVllmServer server(cert_);
        QVERIFY(server.valid());
        qunsetenv("KVSCOPE_CA_FILE");
        qunsetenv("SSL_CERT_FILE");
        ConnectOptions o = options_for(server.url());
        o.kind = ServerKind::Vllm; // a kind known at once: the polls themselves must fail
        const RemoteMonitor monitor(o);
        std::uint64_t seen = 0;
        std::shared_ptr<const RemoteSample> s;
        QVERIFY(kvscope::test::wait_until([&] {
            s = monitor.wait_next(seen, 200ms);
            return !s->faults.empty();
        }));
        QVERIFY(s->link != LinkState::Live);
        QVERIFY2(s->faults.front().find("certificate is not trusted") != std::string::npos, s->faults.front().c_str());
    }
};

QTEST_GUILESS_MAIN(TestRemoteMonitorTls)
#include "test_remote_monitor_tls.moc"
