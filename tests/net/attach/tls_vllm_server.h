// tests/net/attach: what kvscope's attach reads from vLLM (/v1/models with
// owned_by "vllm", /metrics in vLLM's shape from fake_vllm_server.h, and
// /health), served over TLS on loopback with a test certificate
// (support/test_certificate.h): for the monitor's and `kvscope-cli top`'s
// HTTPS tests.
#pragma once

#include <string>
#include <thread>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "net/attach/fake_vllm_server.h"
#include "support/test_certificate.h"

namespace kvscope::test {

// Listens on 127.0.0.1 (a free port) at once; valid() says whether it could.
class TlsVllmServer {
public:
    explicit TlsVllmServer(const kvscope::test::TestCertificate& cert)
        : server_(cert.cert.toStdString().c_str(), cert.key.toStdString().c_str()) {
        server_.Get("/v1/models", [](const httplib::Request&, httplib::Response& res) {
            const nlohmann::json card{
                {"id", "tls-model"}, {"object", "model"}, {"owned_by", "vllm"}, {"max_model_len", 2048}};
            res.set_content(nlohmann::json{{"object", "list"}, {"data", {card}}}.dump(), "application/json");
        });
        server_.Get("/metrics", [](const httplib::Request&, httplib::Response& res) {
            res.set_content(kvscope::test::vllm_metrics_text("tls-model", {kvscope::test::FakeVllmRank{}}),
                            "text/plain");
        });
        server_.Get("/health", [](const httplib::Request&, httplib::Response& res) { res.status = 200; });
        port_ = server_.bind_to_any_port("127.0.0.1");
        thread_ = std::thread([this] { server_.listen_after_bind(); });
    }
    ~TlsVllmServer() {
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

} // namespace kvscope::test
