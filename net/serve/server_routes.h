// net/serve: what each route of `kvscope-cli serve` does, on a worker
// thread, given a request the connection has read whole (http_exchange.h):
// the OpenAI-compatible endpoints, /tokenize, /detokenize, /metrics and the
// KV feeds, with the API key. Bodies go through openai_request /
// openai_response, generation through the EngineService, Prometheus text
// comes from the MetricsRegistry. Every error goes back OpenAI-shaped
// (ApiError::to_json) with its status; whatever a route throws is that
// request's error and a log line, never the server's end.
#pragma once

#include <atomic>
#include <memory>
#include <optional>
#include <string>

#include "engine/service/engine_service.h"
#include "net/serve/access_log.h"
#include "net/serve/api_error.h"
#include "net/serve/http_exchange.h"
#include "net/serve/metrics_registry.h"
#include "net/serve/openai_request.h"

namespace kvscope::serve {

// What serve() hands the routes; each must outlive stop().
struct ServingBackend {
    EngineService* service = nullptr;
    ServedModel model;
    const MetricsRegistry* metrics = nullptr;
};

// The body of an error reply.
std::string error_body(const ApiError& error);

class ServerRoutes {
public:
    // `api_key` empty: no key. Otherwise /v1/*, /tokenize, /detokenize and
    // /kv/* need "Authorization: Bearer <key>"; /health and /metrics stay
    // open, as vLLM's. `log` outlives the routes.
    ServerRoutes(std::string api_key, RequestLimits limits, const AccessLog& log);

    // From now on requests reach `backend` (set once, before any request
    // can see it).
    void serve(const ServingBackend& backend);
    // New requests and /health answer 503, /metrics stays 200, /kv/stream
    // feeds end; generations in flight go on until the service ends them.
    void begin_drain() { draining_.store(true); }
    bool draining() const { return draining_.load(); }

    // Answers `request` on `reply`; returns when its reply is complete (or
    // abandoned). Any thread; many at once.
    void handle(const HttpRequest& request, ReplyChannel& reply) const;

private:
    using Route = void (ServerRoutes::*)(const HttpRequest&, ReplyChannel&) const;
    Route route_of(const HttpRequest& request) const;
    bool authorized(const HttpRequest& request) const;
    const ServingBackend& live() const;

    void health(const HttpRequest&, ReplyChannel&) const;
    void models(const HttpRequest&, ReplyChannel&) const;
    void model(const HttpRequest&, ReplyChannel&) const;
    void completions(const HttpRequest&, ReplyChannel&) const;
    void chat_completions(const HttpRequest&, ReplyChannel&) const;
    void tokenize(const HttpRequest&, ReplyChannel&) const;
    void detokenize(const HttpRequest&, ReplyChannel&) const;
    void metrics(const HttpRequest&, ReplyChannel&) const;
    void kv_snapshot(const HttpRequest&, ReplyChannel&) const;
    void kv_stream(const HttpRequest&, ReplyChannel&) const;

    void generate(const HttpRequest& request, ReplyChannel& reply, Api api) const;
    std::shared_ptr<const EngineSnapshot> latest_snapshot() const;

    std::string api_key_;
    RequestLimits limits_;
    const AccessLog& log_;
    std::optional<ServingBackend> backend_; // set once, before `ready_`
    std::atomic<bool> ready_{false};
    std::atomic<bool> draining_{false};
};

} // namespace kvscope::serve
