#include "net/serve/server_routes.h"

#include <chrono>
#include <cstdint>
#include <thread>

#include <nlohmann/json.hpp>

#include "engine/snapshot_json.h"
#include "net/serve/openai_response.h"

namespace kvscope::serve {
namespace {

using Clock = std::chrono::steady_clock;
using Json = nlohmann::ordered_json;
using namespace std::chrono_literals;

// How long a route waits for the engine before looking at its client again.
constexpr auto kOutputPoll = 100ms;
// A quiet KV feed sends an SSE comment this often.
constexpr auto kHeartbeat = 1s;
// /kv/stream sends at most 10 snapshots a second.
constexpr auto kFeedInterval = 100ms;
constexpr const char* kJson = "application/json";
constexpr const char* kEventStream = "text/event-stream";

double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

std::string dump(const Json& j) { return j.dump(-1, ' ', false, Json::error_handler_t::replace); }

void send_json(ReplyChannel& reply, int status, const Json& body) { reply.send(status, kJson, dump(body)); }

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

constexpr std::string_view kModelPrefix = "/v1/models/";

// The request's first output: its first token, or how it ended before
// one; nullopt when its client left first (the request is cancelled).
std::optional<RequestOutput> first_output(EngineService& service, const std::shared_ptr<RequestHandle>& handle,
                                          const HttpRequest& request, ReplyChannel& reply) {
    for (;;) {
        if (auto out = handle->next(kOutputPoll)) {
            reply.figures().ttft_ms = ms_since(request.start);
            return out;
        }
        if (reply.gone()) {
            service.cancel(handle);
            reply.abandon();
            return std::nullopt;
        }
    }
}

// The whole reply, sent once complete; a client that goes away first
// cancels its request.
void collect_reply(EngineService& service, const std::shared_ptr<RequestHandle>& handle, const HttpRequest& request,
                   ReplyChannel& reply, ResponseCollector collector) {
    while (!collector.done()) {
        if (auto out = handle->next(kOutputPoll)) {
            if (!reply.figures().ttft_ms)
                reply.figures().ttft_ms = ms_since(request.start);
            collector.on_output(*out);
        }
        if (reply.gone()) {
            service.cancel(handle);
            return reply.abandon();
        }
    }
    reply.figures().tokens_out = collector.usage().completion_tokens;
    if (collector.error()) {
        service.cancel(handle); // the samples that had not failed
        throw *collector.error();
    }
    send_json(reply, 200, collector.to_json());
}

// The reply as server-sent events. A client that leaves, or reads so
// slowly that its connection's bound is passed, cancels its request: its
// blocks go back to the pool at the engine's next round.
void stream_reply(EngineService& service, const std::shared_ptr<RequestHandle>& handle, ReplyChannel& reply,
                  ResponseStream stream, const RequestOutput& first) {
    reply.begin_stream(kEventStream);
    std::string text = stream.begin(); // before the first output's events
    text += stream.on_output(first);
    for (;;) {
        reply.figures().tokens_out = stream.usage().completion_tokens;
        if (!text.empty() && !reply.write(std::move(text)))
            return service.cancel(handle);
        text.clear();
        if (auto out = handle->next(kOutputPoll))
            text = stream.on_output(*out);
        else if (handle->done()) {
            // Its last output may have come between the wait and done().
            if (auto last = handle->next(0ms))
                text = stream.on_output(*last);
            else
                break;
        } else if (reply.gone())
            return service.cancel(handle);
    }
    if (!reply.write(stream.end()))
        return service.cancel(handle); // finished: cancel leaves it alone
    reply.end_stream();
}

// /kv/stream's position: the newest snapshot version it sent.
struct FeedState {
    std::uint64_t version = 0;
    std::shared_ptr<const EngineSnapshot> sent;
    Clock::time_point next_send = Clock::now();
    Clock::time_point last_write = Clock::now();
};

// One turn of /kv/stream: the newest snapshot when there is one the feed
// has not sent (at most every kFeedInterval, and only once the last one
// left: a slow reader gets fewer snapshots, never a growing queue), a
// comment when it has been quiet for kHeartbeat, else a short wait for the
// engine. While a snapshot is still on its way (a large pool's is MiBs) the
// stream is not quiet, and a comment queued behind it would only take it
// past the connection's bound. False once the client is gone.
bool feed(const EngineService& service, FeedState& s, ReplyChannel& reply) {
    std::this_thread::sleep_until(s.next_send);
    if (reply.unsent_bytes() > 0) {
        s.last_write = Clock::now();
        std::this_thread::sleep_for(kFeedInterval / 4);
        return !reply.gone();
    }
    const std::uint64_t version = service.snapshot_version();
    if (version <= s.version) {
        service.wait_snapshot(s.version, 250ms);
        if (Clock::now() - s.last_write < kHeartbeat)
            return !reply.gone();
        s.last_write = Clock::now();
        return reply.write(": idle\n\n");
    }
    s.version = version; // snapshot() is this version or newer
    std::shared_ptr<const EngineSnapshot> snapshot = service.snapshot();
    if (snapshot == s.sent)
        return !reply.gone();
    s.sent = std::move(snapshot);
    s.next_send = Clock::now() + kFeedInterval;
    s.last_write = Clock::now();
    return reply.write(sse_event(to_json(*s.sent)));
}

} // namespace

std::string error_body(const ApiError& error) { return dump(error.to_json()); }

ServerRoutes::ServerRoutes(std::string api_key, RequestLimits limits, const AccessLog& log)
    : api_key_(std::move(api_key)), limits_(limits), log_(log) {}

void ServerRoutes::serve(const ServingBackend& backend) {
    backend_ = backend;
    ready_.store(true, std::memory_order_release);
}

// HEAD is GET without the body (the connection leaves it out), but for
// /kv/stream, whose body has no end.
ServerRoutes::Route ServerRoutes::route_of(const HttpRequest& r) const {
    if (r.method == "HEAD" && r.path == "/kv/stream")
        return nullptr;
    if (r.method == "GET" || r.method == "HEAD") {
        if (r.path == "/health")
            return &ServerRoutes::health;
        if (r.path == "/v1/models")
            return &ServerRoutes::models;
        if (r.path.starts_with(kModelPrefix) && r.path.size() > kModelPrefix.size())
            return &ServerRoutes::model;
        if (r.path == "/metrics")
            return &ServerRoutes::metrics;
        if (r.path == "/kv/snapshot")
            return &ServerRoutes::kv_snapshot;
        if (r.path == "/kv/stream")
            return &ServerRoutes::kv_stream;
    } else if (r.method == "POST") {
        if (r.path == "/v1/completions")
            return &ServerRoutes::completions;
        if (r.path == "/v1/chat/completions")
            return &ServerRoutes::chat_completions;
        if (r.path == "/tokenize")
            return &ServerRoutes::tokenize;
        if (r.path == "/detokenize")
            return &ServerRoutes::detokenize;
    }
    return nullptr;
}

bool ServerRoutes::authorized(const HttpRequest& r) const {
    return api_key_.empty() || !needs_key(r.path) || same_key(r.authorization, "Bearer " + api_key_);
}

void ServerRoutes::handle(const HttpRequest& request, ReplyChannel& reply) const {
    try {
        if (!authorized(request))
            throw ApiError::unauthorized("a valid API key is required: Authorization: Bearer <key>");
        const Route route = route_of(request);
        if (!route)
            throw ApiError::not_found("no route " + request.method + " " + request.path);
        (this->*route)(request, reply);
    } catch (const ApiError& e) {
        reply.send(e.status(), kJson, error_body(e));
    } catch (const std::exception& e) {
        log_.error(request.method + " " + request.path + ": " + e.what());
        reply.send(500, kJson, error_body(ApiError(500, "server_error", e.what())));
    }
}

// The backend, once it may take requests; otherwise the 503 that says why not.
const ServingBackend& ServerRoutes::live() const {
    if (draining_.load())
        throw ApiError::overloaded("the server is shutting down");
    if (!ready_.load(std::memory_order_acquire))
        throw ApiError::overloaded("the model is still loading");
    return *backend_;
}

void ServerRoutes::health(const HttpRequest&, ReplyChannel& reply) const {
    live();
    send_json(reply, 200, {{"status", "ok"}});
}

void ServerRoutes::models(const HttpRequest&, ReplyChannel& reply) const {
    send_json(reply, 200, models_response(live().model, unix_now()));
}

// GET /v1/models/{id}: the model object /v1/models lists, for the served id.
void ServerRoutes::model(const HttpRequest& request, ReplyChannel& reply) const {
    const ServingBackend& b = live();
    const std::string id = request.path.substr(kModelPrefix.size());
    if (id != b.model.name)
        throw ApiError::not_found("The model '" + id + "' does not exist", "model");
    send_json(reply, 200, models_response(b.model, unix_now())["data"][0]);
}

void ServerRoutes::completions(const HttpRequest& r, ReplyChannel& reply) const {
    generate(r, reply, Api::Completions);
}

void ServerRoutes::chat_completions(const HttpRequest& r, ReplyChannel& reply) const { generate(r, reply, Api::Chat); }

void ServerRoutes::generate(const HttpRequest& request, ReplyChannel& reply, Api api) const {
    const ServingBackend& b = live();
    const nlohmann::json body = parse_body(request.body, limits_);
    GenerationRequest gen = api == Api::Chat ? parse_chat_request(body, b.model, limits_)
                                             : parse_completion_request(body, b.model, limits_);
    const auto prompt_tokens = static_cast<std::uint32_t>(gen.prompt.size());
    reply.figures().tokens_in = prompt_tokens;
    ResponseHeader header{api, new_response_id(api), b.model.name, unix_now(), gen.dropped_messages, gen.reply_limit};
    ChoiceContent content = choice_content(gen, *b.model.tokenizer);
    Submitted submitted = b.service->submit(std::move(gen.prompt), gen.params);
    if (submitted.refusal)
        throw service_error(*submitted.refusal);
    const std::shared_ptr<RequestHandle> handle = std::move(submitted.handle);
    if (!gen.stream)
        return collect_reply(*b.service, handle, request, reply,
                             ResponseCollector(std::move(header), gen.params.n, prompt_tokens, std::move(content)));
    // The status goes out with the stream's first bytes: wait for the
    // first output, so a request the engine refuses answers 400.
    const std::optional<RequestOutput> first = first_output(*b.service, handle, request, reply);
    if (!first)
        return;
    if (first->finish == FinishReason::Error && first->tokens.empty()) {
        b.service->cancel(handle);
        throw engine_error(*first, false);
    }
    stream_reply(*b.service, handle, reply,
                 ResponseStream(std::move(header), gen.params.n, gen.include_usage, prompt_tokens, std::move(content)),
                 *first);
}

void ServerRoutes::tokenize(const HttpRequest& request, ReplyChannel& reply) const {
    const ServingBackend& b = live();
    const std::vector<TokenId> ids = parse_tokenize_request(parse_body(request.body, limits_), b.model);
    reply.figures().tokens_in = ids.size();
    send_json(reply, 200, tokenize_response(ids, b.model));
}

void ServerRoutes::detokenize(const HttpRequest& request, ReplyChannel& reply) const {
    const ServingBackend& b = live();
    const std::vector<TokenId> ids = parse_detokenize_request(parse_body(request.body, limits_), b.model);
    reply.figures().tokens_in = ids.size();
    send_json(reply, 200, detokenize_response(ids, b.model));
}

// Readable while draining: a scraper sees the drain happen.
void ServerRoutes::metrics(const HttpRequest&, ReplyChannel& reply) const {
    if (!ready_.load(std::memory_order_acquire))
        throw ApiError::overloaded("the model is still loading");
    if (!backend_->metrics)
        throw ApiError::not_found("this server keeps no metrics");
    reply.send(200, "text/plain; version=0.0.4; charset=utf-8", backend_->metrics->serialize());
}

std::shared_ptr<const EngineSnapshot> ServerRoutes::latest_snapshot() const {
    auto snapshot = live().service->snapshot();
    if (!snapshot)
        throw ApiError::overloaded("the engine has not published a snapshot yet");
    return snapshot;
}

void ServerRoutes::kv_snapshot(const HttpRequest&, ReplyChannel& reply) const {
    send_json(reply, 200, to_json(*latest_snapshot()));
}

void ServerRoutes::kv_stream(const HttpRequest&, ReplyChannel& reply) const {
    const EngineService& service = *live().service;
    reply.begin_stream(kEventStream);
    FeedState state;
    while (!draining_.load())
        if (!feed(service, state, reply))
            return;
    reply.end_stream();
}

} // namespace kvscope::serve
