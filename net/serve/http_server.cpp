#include "net/serve/http_server.h"

#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <optional>
#include <thread>

#include <httplib.h>
#include <netdb.h>
#include <sys/socket.h>
#include <nlohmann/json.hpp>

#include "net/serve/openai_response.h"
#include "engine/core/error.h"
#include "engine/core/log.h"
#include "engine/snapshot_json.h"

namespace kvscope::serve {
namespace {

using Clock = std::chrono::steady_clock;
using Json = nlohmann::ordered_json;
using namespace std::chrono_literals;

// How long a reply waits for the engine before looking at its client again.
constexpr auto kOutputPoll = 100ms;
// A quiet KV feed sends an SSE comment this often: writing is how a
// streaming reply notices that its client left.
constexpr auto kHeartbeat = 1s;
// The access log's status for a request whose client left before its reply
// (nginx's word for it); the client never sees it.
constexpr int kClientClosedRequest = 499;
// /kv/stream sends at most 10 snapshots a second.
constexpr auto kFeedInterval = 100ms;
// Idle keep-alive connections hold a worker; stop() waits for them this long.
constexpr time_t kKeepAliveSeconds = 2;
// Requests one connection may carry (httplib's default, 5, has a client
// that reuses its connection reconnect every 5 requests).
constexpr std::size_t kKeepAliveMaxRequests = 1000;
// How long stop() lets replies finish writing before it closes the socket.
constexpr auto kStopWaitsForReplies = 2s;

// What the access-log line of the request a worker thread is serving says.
// httplib runs a request's routing, handler, content provider and logger on
// one worker thread, one request after another, so a thread-local record
// is that request's.
struct AccessRecord {
    std::optional<Clock::time_point> start; // when routing began
    std::optional<std::size_t> tokens_in, tokens_out;
    std::optional<double> ttft_ms;
};
thread_local AccessRecord t_access;

double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

std::string dump(const Json& j) { return j.dump(-1, ' ', false, Json::error_handler_t::replace); }

void send_json(httplib::Response& res, int status, const Json& body) {
    res.status = status;
    res.set_content(dump(body), "application/json");
}

void send_error(httplib::Response& res, const ApiError& error) { send_json(res, error.status(), error.to_json()); }

std::int64_t unix_now() {
    const auto since_epoch = std::chrono::system_clock::now().time_since_epoch();
    return std::chrono::duration_cast<std::chrono::seconds>(since_epoch).count();
}

bool needs_key(const std::string& path) {
    return path.starts_with("/v1/") || path == "/tokenize" || path == "/detokenize" || path.starts_with("/kv/");
}

// Compares every byte whatever the first difference, so the time taken
// says nothing about how much of a guessed key was right.
bool same_key(std::string_view given, std::string_view key) {
    unsigned char diff = given.size() == key.size() ? 0 : 1;
    for (std::size_t i = 0; i < given.size(); ++i)
        diff |= static_cast<unsigned char>(given[i] ^ key[i % key.size()]);
    return diff == 0;
}

// The error a status httplib set by itself (no route, body too large,
// unreadable request) stands for.
ApiError error_for_status(const httplib::Request& req, int status, const RequestLimits& limits) {
    switch (status) {
    case 404: return ApiError::not_found("no route " + req.method + " " + req.path);
    case 413:
        return ApiError::too_large("the request body is larger than the server's limit of " +
                                   std::to_string(limits.max_body_bytes) + " bytes");
    case 400: return ApiError::invalid_request("the HTTP request could not be read");
    default: return ApiError(status, "server_error", "HTTP status " + std::to_string(status));
    }
}

// The port and numeric address of one end of a socket (its own:
// getsockname; its peer's: getpeername), written as httplib writes
// Request::remote_addr.
std::optional<std::pair<int, std::string>> socket_end(int fd, bool peer) {
    sockaddr_storage address{};
    socklen_t length = sizeof address;
    auto* a = reinterpret_cast<sockaddr*>(&address);
    if ((peer ? getpeername(fd, a, &length) : getsockname(fd, a, &length)) != 0)
        return std::nullopt;
    char host[NI_MAXHOST];
    char port[NI_MAXSERV];
    if (getnameinfo(a, length, host, sizeof host, port, sizeof port, NI_NUMERICHOST | NI_NUMERICSERV) != 0)
        return std::nullopt;
    return std::pair(std::atoi(port), std::string(host));
}

// httplib 0.11.4 shows a handler nothing of its connection (later versions
// have Request::is_connection_closed), so a handler that waits before
// writing, as a non-streamed reply does, finds its socket among the
// process's descriptors by the addresses httplib reports and peeks at it:
// end of stream or a reset means the client left. Linux (/proc/self/fd).
class ClientWatch {
public:
    explicit ClientWatch(const httplib::Request& req) : fd_(find_socket(req)) {}

    bool gone() const {
        if (fd_ < 0)
            return false;
        char byte = 0;
        const ssize_t n = recv(fd_, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
        return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
    }

private:
    static int find_socket(const httplib::Request& req) {
        std::error_code error;
        for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd", error)) {
            const int fd = std::atoi(entry.path().filename().c_str());
            const auto local = socket_end(fd, false);
            if (!local || local->first != req.local_port)
                continue;
            const auto peer = socket_end(fd, true);
            if (peer && peer->first == req.remote_port && peer->second == req.remote_addr)
                return fd;
        }
        return -1; // never seen as gone: the request runs to its end
    }

    int fd_;
};

// The generation replies being written. stop() waits for them (a while):
// a drained request's handle is done before its reply's last chunks are out.
class RepliesInFlight {
public:
    // Held while a reply is written; the last copy's end counts it out.
    using Token = std::shared_ptr<void>;
    Token enter() {
        std::lock_guard lock(mutex_);
        ++count_;
        return Token(nullptr, [this](void*) { leave(); });
    }
    void wait_until_none(std::chrono::milliseconds timeout) {
        std::unique_lock lock(mutex_);
        none_.wait_for(lock, timeout, [&] { return count_ == 0; });
    }

private:
    void leave() {
        std::lock_guard lock(mutex_);
        if (--count_ == 0)
            none_.notify_all();
    }
    std::mutex mutex_;
    std::condition_variable none_;
    int count_ = 0;
};

// A streamed reply (text/event-stream) in progress.
struct StreamReply {
    RepliesInFlight::Token in_flight;
    std::shared_ptr<RequestHandle> handle;
    ResponseStream stream;
    std::optional<RequestOutput> first; // taken before the reply began
    bool begun = false;
    bool ended = false; // the text last returned closes the stream

    // The next piece of the stream; "" while the engine has nothing new.
    std::string next() {
        std::string text;
        if (!begun) {
            text = stream.begin();
            begun = true;
        }
        if (first) {
            text += stream.on_output(*first);
            first.reset();
        } else if (auto out = handle->next(kOutputPoll)) {
            text += stream.on_output(*out);
        } else if (handle->done()) {
            text += stream.end();
            ended = true;
        }
        return text;
    }
};

// /kv/stream's position: the newest snapshot version it sent.
struct FeedState {
    std::uint64_t version = 0;
    std::shared_ptr<const EngineSnapshot> sent;
    Clock::time_point next_send = Clock::now();
    Clock::time_point last_write = Clock::now();
};

} // namespace

struct HttpServer::Impl {
    HttpServerOptions options;
    httplib::Server http;
    std::thread listener;
    std::atomic<bool> listener_ended{false};
    std::optional<ServingBackend> backend; // set once, before `ready`
    std::atomic<bool> ready{false};
    std::atomic<bool> draining{false};
    RepliesInFlight replies;
    std::atomic<int> listen_fd{-1}; // the listening socket, as the socket-options hook last saw it
    std::shared_ptr<spdlog::logger> log = logger("http");

    explicit Impl(HttpServerOptions o) : options(std::move(o)) {}

    // The backend, once it may take requests; otherwise the 503 that says why not.
    const ServingBackend& live() const {
        if (draining.load())
            throw ApiError::overloaded("the server is shutting down");
        if (!ready.load(std::memory_order_acquire))
            throw ApiError::overloaded("the model is still loading");
        return *backend;
    }

    // Runs a route; whatever it throws becomes its request's error reply.
    httplib::Server::Handler guarded(void (Impl::*route)(const httplib::Request&, httplib::Response&)) {
        return [this, route](const httplib::Request& req, httplib::Response& res) {
            try {
                (this->*route)(req, res);
            } catch (const ApiError& e) {
                send_error(res, e);
            } catch (const std::exception& e) {
                log->error("{} {}: {}", req.method, req.path, e.what());
                send_error(res, ApiError(500, "server_error", e.what()));
            }
        };
    }

    void install_routes() {
        http.Get("/health", guarded(&Impl::health));
        http.Get("/v1/models", guarded(&Impl::models));
        http.Post("/v1/completions", guarded(&Impl::completions));
        http.Post("/v1/chat/completions", guarded(&Impl::chat_completions));
        http.Post("/tokenize", guarded(&Impl::tokenize));
        http.Post("/detokenize", guarded(&Impl::detokenize));
        http.Get("/metrics", guarded(&Impl::metrics));
        http.Get("/kv/snapshot", guarded(&Impl::kv_snapshot));
        http.Get("/kv/stream", guarded(&Impl::kv_stream));
    }

    void install_hooks() {
        http.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
            t_access = {};
            t_access.start = Clock::now();
            if (options.api_key.empty() || !needs_key(req.path) ||
                same_key(req.get_header_value("Authorization"), "Bearer " + options.api_key))
                return httplib::Server::HandlerResponse::Unhandled;
            send_error(res, ApiError::unauthorized("a valid API key is required: Authorization: Bearer <key>"));
            return httplib::Server::HandlerResponse::Handled;
        });
        http.set_error_handler(
            httplib::Server::HandlerWithResponse([this](const httplib::Request& req, httplib::Response& res) {
                if (!res.body.empty())
                    return httplib::Server::HandlerResponse::Unhandled;
                send_error(res, error_for_status(req, res.status, options.limits));
                return httplib::Server::HandlerResponse::Handled;
            }));
        http.set_exception_handler([this](const httplib::Request& req, httplib::Response& res, std::exception_ptr) {
            log->error("{} {}: unexpected exception", req.method, req.path);
            send_error(res, ApiError(500, "server_error", "internal error"));
        });
        http.set_logger([this](const httplib::Request& req, const httplib::Response& res) { access_log(req, res); });
    }

    void access_log(const httplib::Request& req, const httplib::Response& res) {
        auto count = [](std::optional<std::size_t> n) { return n ? std::to_string(*n) : std::string("-"); };
        auto ms = [](std::optional<double> t) { return t ? fmt::format("{:.1f}", *t) : std::string("-"); };
        const std::optional<double> total = t_access.start ? std::optional(ms_since(*t_access.start)) : std::nullopt;
        log->info("{} {} {} {} tokens in {} out {} ttft_ms {} total_ms {}", req.remote_addr, req.method, req.path,
                  res.status, count(t_access.tokens_in), count(t_access.tokens_out), ms(t_access.ttft_ms), ms(total));
        t_access = {};
    }

    // httplib's default options set SO_REUSEPORT, which lets a second server
    // bind a port another already serves and share its connections: only
    // SO_REUSEADDR here, so a taken port is an error. The hook is also the
    // one place the listening socket shows itself (see widen_backlog).
    void socket_options(int fd) {
        const int yes = 1;
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
        listen_fd = fd;
    }

    // httplib 0.11.4 listens with a backlog of 5 (CPPHTTPLIB_LISTEN_BACKLOG,
    // compiled into Debian's library): a burst of clients connecting at once
    // overflows it and some lose their first request. Linux takes a new
    // backlog when listen() is called again on a listening socket.
    void widen_backlog() const { listen(listen_fd.load(), SOMAXCONN); }

    void configure() {
        http.set_socket_options([this](socket_t fd) { socket_options(fd); });
        const std::size_t threads = options.http_threads;
        http.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
        http.set_payload_max_length(options.limits.max_body_bytes);
        http.set_keep_alive_timeout(kKeepAliveSeconds);
        http.set_keep_alive_max_count(kKeepAliveMaxRequests);
        install_hooks();
        install_routes();
    }

    // Routes.

    void health(const httplib::Request&, httplib::Response& res) {
        live();
        send_json(res, 200, {{"status", "ok"}});
    }

    void models(const httplib::Request&, httplib::Response& res) {
        send_json(res, 200, models_response(live().model, unix_now()));
    }

    void completions(const httplib::Request& req, httplib::Response& res) { generate(req, res, Api::Completions); }
    void chat_completions(const httplib::Request& req, httplib::Response& res) { generate(req, res, Api::Chat); }

    void generate(const httplib::Request& req, httplib::Response& res, Api api) {
        const ServingBackend& b = live();
        const nlohmann::json body = parse_body(req.body, options.limits);
        GenerationRequest gen = api == Api::Chat ? parse_chat_request(body, b.model, options.limits)
                                                 : parse_completion_request(body, b.model, options.limits);
        const auto prompt_tokens = static_cast<std::uint32_t>(gen.prompt.size());
        t_access.tokens_in = prompt_tokens;
        ResponseHeader header{api, new_response_id(api), b.model.name, unix_now(), gen.dropped_messages,
                              gen.reply_limit};
        ChoiceContent content = choice_content(gen, *b.model.tokenizer);
        RepliesInFlight::Token in_flight = replies.enter();
        Submitted submitted = b.service->submit(std::move(gen.prompt), gen.params);
        if (submitted.refusal)
            throw service_error(*submitted.refusal);
        const std::shared_ptr<RequestHandle> handle = std::move(submitted.handle);
        const ClientWatch client(req);
        if (!gen.stream)
            return collect_reply(res, handle, client,
                                 ResponseCollector(std::move(header), gen.params.n, prompt_tokens, std::move(content)));
        // The status goes out with the stream's first bytes: wait for the
        // first output, so a request the engine refuses answers 400.
        std::optional<RequestOutput> first = first_output(res, handle, client);
        if (!first)
            return;
        if (first->finish == FinishReason::Error && first->tokens.empty()) {
            b.service->cancel(handle);
            throw engine_error(*first, false);
        }
        stream_reply(res, StreamReply{std::move(in_flight), handle,
                                      ResponseStream(std::move(header), gen.params.n, gen.include_usage, prompt_tokens,
                                                     std::move(content)),
                                      std::move(*first)});
    }

    // The request's first output: its first token, or how it ended before
    // one; nullopt when its client left first (the request is cancelled).
    std::optional<RequestOutput> first_output(httplib::Response& res, const std::shared_ptr<RequestHandle>& handle,
                                              const ClientWatch& client) {
        for (;;) {
            if (auto out = handle->next(kOutputPoll)) {
                t_access.ttft_ms = ms_since(*t_access.start);
                return out;
            }
            if (client.gone()) {
                client_left(res, handle);
                return std::nullopt;
            }
        }
    }

    void client_left(httplib::Response& res, const std::shared_ptr<RequestHandle>& handle) {
        backend->service->cancel(handle);
        res.status = kClientClosedRequest;
    }

    // The whole reply, sent once complete; a client that goes away first
    // cancels its request.
    void collect_reply(httplib::Response& res, const std::shared_ptr<RequestHandle>& handle, const ClientWatch& client,
                       ResponseCollector collector) {
        while (!collector.done()) {
            if (auto out = handle->next(kOutputPoll)) {
                if (!t_access.ttft_ms)
                    t_access.ttft_ms = ms_since(*t_access.start);
                collector.on_output(*out);
            }
            if (client.gone()) // a peek: cheap next to a token
                return client_left(res, handle);
        }
        t_access.tokens_out = collector.usage().completion_tokens;
        if (collector.error()) {
            backend->service->cancel(handle); // the samples that had not failed
            throw *collector.error();
        }
        send_json(res, 200, collector.to_json());
    }

    // The reply as server-sent events; a client that goes away cancels its
    // request (the releaser runs however the reply ended; cancel leaves a
    // finished request alone).
    void stream_reply(httplib::Response& res, StreamReply reply) {
        auto state = std::make_shared<StreamReply>(std::move(reply));
        EngineService* service = backend->service;
        res.set_chunked_content_provider(
            "text/event-stream",
            [state](std::size_t, httplib::DataSink& sink) {
                const std::string text = state->next();
                t_access.tokens_out = state->stream.usage().completion_tokens;
                if (!text.empty() && !sink.write(text.data(), text.size()))
                    return false;
                if (state->ended)
                    sink.done();
                return true;
            },
            [state, service](bool) { service->cancel(state->handle); });
    }

    void tokenize(const httplib::Request& req, httplib::Response& res) {
        const ServingBackend& b = live();
        const std::vector<TokenId> ids = parse_tokenize_request(parse_body(req.body, options.limits), b.model);
        t_access.tokens_in = ids.size();
        send_json(res, 200, tokenize_response(ids, b.model));
    }

    void detokenize(const httplib::Request& req, httplib::Response& res) {
        const ServingBackend& b = live();
        const std::vector<TokenId> ids = parse_detokenize_request(parse_body(req.body, options.limits), b.model);
        t_access.tokens_in = ids.size();
        send_json(res, 200, detokenize_response(ids, b.model));
    }

    void metrics(const httplib::Request&, httplib::Response& res) {
        res.set_content(live().metrics->serialize(), "text/plain; version=0.0.4; charset=utf-8");
    }

    std::shared_ptr<const EngineSnapshot> latest_snapshot() const {
        auto snapshot = live().service->snapshot();
        if (!snapshot)
            throw ApiError::overloaded("the engine has not published a snapshot yet");
        return snapshot;
    }

    void kv_snapshot(const httplib::Request&, httplib::Response& res) {
        send_json(res, 200, to_json(*latest_snapshot()));
    }

    void kv_stream(const httplib::Request&, httplib::Response& res) {
        EngineService* service = live().service;
        auto state = std::make_shared<FeedState>();
        auto next_event = [this, service, state](std::size_t, httplib::DataSink& sink) {
            if (draining.load()) {
                sink.done();
                return true;
            }
            return feed(*service, *state, sink);
        };
        res.set_chunked_content_provider("text/event-stream", std::move(next_event));
    }

    // One turn of /kv/stream: the newest snapshot when there is one the feed
    // has not sent (at most every kFeedInterval), a comment when it has been
    // quiet for kHeartbeat, else a short wait for the engine.
    static bool feed(const EngineService& service, FeedState& s, httplib::DataSink& sink) {
        std::this_thread::sleep_until(s.next_send);
        const std::uint64_t version = service.snapshot_version();
        if (version <= s.version) {
            service.wait_snapshot(s.version, 250ms);
            if (Clock::now() - s.last_write < kHeartbeat)
                return true;
            s.last_write = Clock::now();
            return sink.write(": idle\n\n", 9);
        }
        s.version = version; // snapshot() is this version or newer
        std::shared_ptr<const EngineSnapshot> snapshot = service.snapshot();
        if (snapshot == s.sent)
            return true;
        s.sent = std::move(snapshot);
        s.next_send = Clock::now() + kFeedInterval;
        s.last_write = Clock::now();
        const std::string event = sse_event(to_json(*s.sent));
        return sink.write(event.data(), event.size());
    }
};

HttpServer::HttpServer(HttpServerOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {
    impl_->configure();
}

HttpServer::~HttpServer() { stop(); }

int HttpServer::start() {
    const HttpServerOptions& o = impl_->options;
    const int port = o.port == 0 ? impl_->http.bind_to_any_port(o.host)
                                 : (impl_->http.bind_to_port(o.host, o.port) ? o.port : -1);
    if (port < 0)
        throw Error("cannot listen on " + o.host + ":" + std::to_string(o.port) +
                    " (address in use, or not an address of this machine?)");
    impl_->widen_backlog();
    impl_->listener = std::thread([this] {
        impl_->http.listen_after_bind();
        impl_->listener_ended.store(true);
    });
    // httplib's stop() does nothing before its loop runs, and the loop would
    // then never end: a stop right after start (the model failed to load)
    // would hang in join. Return only once the loop is running (or over).
    while (!impl_->http.is_running() && !impl_->listener_ended.load())
        std::this_thread::yield();
    return port;
}

void HttpServer::serve(const ServingBackend& backend) {
    impl_->backend = backend;
    impl_->ready.store(true, std::memory_order_release);
}

void HttpServer::begin_drain() { impl_->draining.store(true); }

void HttpServer::stop() {
    impl_->replies.wait_until_none(kStopWaitsForReplies);
    impl_->http.stop();
    if (impl_->listener.joinable())
        impl_->listener.join();
}

} // namespace kvscope::serve
