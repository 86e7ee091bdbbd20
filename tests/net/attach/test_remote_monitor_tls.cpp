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

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "net/attach/fake_vllm_server.h"
#include "net/attach/remote_monitor.h"
#include "support/test_certificate.h"
#include "support/wait.h"

using namespace std::chrono_literals;
using kvscope::attach::ConnectOptions;
using kvscope::attach::LinkState;
using kvscope::attach::RemoteMonitor;
using kvscope::attach::RemoteSample;
using kvscope::attach::ServerKind;

namespace {

// What the monitor reads from vLLM (fake_vllm_server.h has the shapes),
// served over TLS.
class TlsVllm {
public:
    TlsVllm(const kvscope::test::TestCertificate& cert)
        : server_(cert.cert.toStdString().c_str(), cert.key.toStdString().c_str()) {
        server_.Get("/v1/models", [](const httplib::Request&, httplib::Response& res) {
            const nlohmann::json card{{"id", "tls-model"}, {"object", "model"}, {"owned_by", "vllm"}, {"max_model_len", 2048}};
            res.set_content(nlohmann::json{{"object", "list"}, {"data", {card}}}.dump(), "application/json");
        });
        server_.Get("/metrics", [](const httplib::Request&, httplib::Response& res) {
            res.set_content(kvscope::test::vllm_metrics_text("tls-model", {kvscope::test::FakeVllmRank{}}), "text/plain");
        });
        server_.Get("/health", [](const httplib::Request&, httplib::Response& res) { res.status = 200; });
        port_ = server_.bind_to_any_port("127.0.0.1");
        thread_ = std::thread([this] { server_.listen_after_bind(); });
    }
    ~TlsVllm() {
        server_.stop();
        thread_.join();
    }
    bool valid() const { return port_ > 0; }
    std::string url() const { return "https://127.0.0.1:" + std::to_string(port_); }

private:
    httplib::SSLServer server_;
    int port_ = 0;
    std::thread thread_;
};

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
        TlsVllm server(cert_);
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
        TlsVllm server(cert_);
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
