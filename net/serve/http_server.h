// net/serve: the HTTP side of `kvscope-cli serve` (cpp-httplib). Routes the
// OpenAI-compatible endpoints, /tokenize, /detokenize, /metrics and the KV
// feeds (/kv/snapshot, /kv/stream) to what kvscope_serve provides: bodies
// through openai_request / openai_response, generation through the
// EngineService, Prometheus text from the MetricsRegistry.
//
// It answers before the model is loaded (start(): /health says 503 until
// serve()), so a supervisor polling /health sees the server come up. Every
// error goes out OpenAI-shaped (ApiError::to_json) with its status, and no
// request can take the server down: whatever a handler throws becomes that
// request's error and a log line. One access-log line per request ("http"
// logger, stderr): method, route, status, tokens in/out, TTFT, total time.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "engine/service/engine_service.h"
#include "net/serve/metrics_registry.h"
#include "net/serve/openai_request.h"

namespace kvscope::serve {

struct HttpServerOptions {
    std::string host = "127.0.0.1";
    int port = 8000; // 0: any free port (start() returns it)
    // Empty: no key. Otherwise /v1/*, /tokenize, /detokenize and /kv/* need
    // "Authorization: Bearer <key>"; /health and /metrics stay open, as vLLM's.
    std::string api_key;
    // Worker threads. A streaming client holds one for its whole reply, so
    // this bounds the concurrent streams (httplib's default pool has 8).
    std::size_t http_threads = 512;
    RequestLimits limits;
};

// What serve() hands the routes; each must outlive stop().
struct ServingBackend {
    EngineService* service = nullptr;
    ServedModel model;
    const MetricsRegistry* metrics = nullptr;
};

class HttpServer {
public:
    explicit HttpServer(HttpServerOptions options);
    ~HttpServer(); // stop()
    HttpServer(const HttpServer&) = delete;
    HttpServer& operator=(const HttpServer&) = delete;

    // Binds host:port and answers on a thread of its own; until serve(),
    // /health and every route answer 503 "loading". Returns the bound port.
    // Throws kvscope::Error when the address cannot be bound.
    int start();
    // From now on requests reach `backend`.
    void serve(const ServingBackend& backend);
    // Stops taking requests: new ones (and /health) answer 503, /kv/stream
    // feeds end; those in flight go on until the service ends them.
    void begin_drain();
    // Closes the socket and joins the HTTP threads. Idempotent.
    void stop();

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

} // namespace kvscope::serve
