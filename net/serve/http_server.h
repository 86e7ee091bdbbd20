// net/serve: the HTTP side of `kvscope-cli serve`, on Boost.Beast over
// Asio: the listening socket, a few event-loop threads that hold every
// connection (an idle keep-alive connection costs a small buffer and a
// timer, no thread), and a pool of worker threads that run the routes
// (server_routes.h) once a request was read whole (http_connection.h
// reads and checks it).
//
// It answers before the model is loaded (start(): /health says 503 until
// serve()), so a supervisor polling /health sees the server come up. Every
// error goes out OpenAI-shaped (ApiError::to_json) with its status, and no
// request can take the server down. One access-log line per request
// (access_log.h): method, route, status, tokens in/out, TTFT, total time.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "net/serve/access_log.h"
#include "net/serve/connection_limits.h"
#include "net/serve/openai_request.h"
#include "net/serve/server_routes.h"

namespace kvscope::serve {

struct HttpServerOptions {
    std::string host = "127.0.0.1";
    int port = 8000; // 0: any free port (start() returns it)
    // Empty: no key. Otherwise /v1/*, /tokenize, /detokenize and /kv/* need
    // "Authorization: Bearer <key>"; /health and /metrics stay open, as vLLM's.
    std::string api_key;
    // Worker threads: the requests served at once (a streaming reply holds
    // one for its whole length; an idle connection holds none).
    std::size_t http_threads = 512;
    RequestLimits limits;
    ConnectionLimits connection;
    LogFormat log_format = LogFormat::Text;
};

class HttpServer {
public:
    explicit HttpServer(HttpServerOptions options);
    ~HttpServer(); // stop()
    HttpServer(const HttpServer&) = delete;
    HttpServer& operator=(const HttpServer&) = delete;

    // Binds host:port and answers on threads of its own; until serve(),
    // /health and every route answer 503 "loading". Returns the bound port.
    // Throws kvscope::Error when the address cannot be bound.
    int start();
    // From now on requests reach `backend`.
    void serve(const ServingBackend& backend);
    // Stops taking requests: new ones (and /health) answer 503 while
    // /metrics stays readable, idle keep-alive connections close at once,
    // the others get "Connection: close" with their reply, /kv/stream feeds
    // end; generations in flight go on until the service ends them.
    void begin_drain();
    // Lets the replies being written finish (a short while), then closes
    // every connection and joins the threads. Idempotent.
    void stop();

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

} // namespace kvscope::serve
