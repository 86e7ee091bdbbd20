#include "net/client/bench_client.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <memory>
#include <thread>

#include <httplib.h>

#include "engine/core/error.h"

namespace kvscope::client {
namespace {

// A refused connection fails at once; this bounds a silent network.
constexpr time_t kConnectTimeoutS = 10;
// How long a reply may go without a byte: a loaded server can queue a
// request for minutes before its first token, and a slow one can take
// that long to load its prompt. llama.cpp pings well within it.
constexpr time_t kReadTimeoutS = 600;
// How much of a failed reply's body an error message quotes.
constexpr std::size_t kErrorQuote = 300;

// --url split for httplib, which takes the origin and the paths apart.
struct ServerAddress {
    std::string origin; // scheme://host[:port]
    std::string prefix; // a path the server is mounted under, or empty
};

ServerAddress parse_url(std::string url) {
    const std::size_t scheme_end = url.find("://");
    if (scheme_end == std::string::npos || !(url.starts_with("http://") || url.starts_with("https://")))
        throw Error("--url must start with http:// or https://, e.g. http://127.0.0.1:8000 (got '" + url + "')");
    while (url.ends_with('/'))
        url.pop_back();
    if (url.ends_with("/v1"))
        url.resize(url.size() - 3);
    const std::size_t path = url.find('/', scheme_end + 3);
    if (path == std::string::npos)
        return {url, ""};
    return {url.substr(0, path), url.substr(path)};
}

std::unique_ptr<httplib::Client> connect(const ServerAddress& address, const std::string& api_key) {
    auto client = std::make_unique<httplib::Client>(address.origin);
    // A fresh connection per request: a server may close a kept-alive one
    // (llama-server's cpp-httplib after 5 requests) just as the next request
    // goes out, which fails that request with "Read" though the server was
    // fine. On loopback a connect costs microseconds against a whole stream.
    client->set_keep_alive(false);
    client->set_connection_timeout(kConnectTimeoutS);
    client->set_read_timeout(kReadTimeoutS);
    if (!api_key.empty())
        client->set_bearer_token_auth(api_key);
    return client;
}

// The message of an OpenAI-shaped error ({"error": {"message": ...}}, or
// the inner object alone, as llama.cpp's error events carry it), else the
// text's start.
std::string error_message(std::string_view text) {
    const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
    const nlohmann::json& e = j.is_object() && j.contains("error") ? j["error"] : j;
    if (e.is_object() && e.contains("message") && e["message"].is_string())
        return e["message"].get<std::string>();
    if (e.is_string())
        return e.get<std::string>();
    return std::string(text.substr(0, kErrorQuote));
}

ServedModel query_model(httplib::Client& client, const ServerAddress& address, const BenchClientOptions& o) {
    const httplib::Result res = client.Get(address.prefix + "/v1/models");
    if (!res)
        throw Error("cannot reach the server at " + o.url + " (" + httplib::to_string(res.error()) +
                    "): is it running, and is the URL right?");
    if (res->status == 401)
        throw Error("the server at " + o.url + " wants an API key (--api-key KEY): " + error_message(res->body));
    if (res->status != 200)
        throw Error("GET /v1/models at " + o.url + " answered " + std::to_string(res->status) + ": " +
                    error_message(res->body));
    const nlohmann::json body = nlohmann::json::parse(res->body, nullptr, false);
    if (body.is_discarded())
        throw Error("GET /v1/models at " + o.url + " did not answer JSON: is it an OpenAI-compatible server?");
    return parse_models_response(body, o.model);
}

std::optional<std::uint32_t> positive_count(const nlohmann::json& object, const char* key) {
    if (!object.is_object() || !object.contains(key) || !object[key].is_number_unsigned())
        return std::nullopt;
    const std::uint64_t v = object[key].get<std::uint64_t>();
    if (v == 0 || v > UINT32_MAX)
        return std::nullopt;
    return static_cast<std::uint32_t>(v);
}

const char* endpoint(BenchApi api) { return api == BenchApi::Chat ? "/v1/chat/completions" : "/v1/completions"; }

RequestOutcome send_request(httplib::Client& client, const ServerAddress& address, const WorkloadRequest& w,
                            BenchApi api, const std::string& model) {
    httplib::Request req;
    req.method = "POST";
    req.path = address.prefix + endpoint(api);
    req.body = request_body(w, api, model).dump();
    req.set_header("Content-Type", "application/json");
    ResponseStream stream(api, BenchClock::now());
    req.response_handler = [&](const httplib::Response& r) {
        stream.on_status(r.status);
        return true;
    };
    req.content_receiver = [&](const char* data, std::size_t n, std::uint64_t, std::uint64_t) {
        return stream.feed({data, n}, BenchClock::now());
    };
    const httplib::Result res = client.send(req);
    return stream.finish(BenchClock::now(), res ? std::string() : httplib::to_string(res.error()),
                         static_cast<std::uint32_t>(w.prompt.size()));
}

double seconds(BenchClock::duration d) { return std::chrono::duration<double>(d).count(); }

double per_second(double count, double duration_s) { return duration_s > 0 ? count / duration_s : 0; }

} // namespace

std::string_view to_string(BenchApi api) { return api == BenchApi::Chat ? "chat" : "completions"; }

BenchApi parse_bench_api(std::string_view word) {
    for (BenchApi a : {BenchApi::Completions, BenchApi::Chat})
        if (to_string(a) == word)
            return a;
    throw Error("unknown --api '" + std::string(word) + "' (expected completions or chat)");
}

ServedModel parse_models_response(const nlohmann::json& body, const std::string& wanted) {
    if (!body.is_object() || !body.contains("data") || !body["data"].is_array())
        throw Error("GET /v1/models answered no \"data\" list: is it an OpenAI-compatible server?");
    std::string listed;
    for (const nlohmann::json& m : body["data"]) {
        if (!m.is_object() || !m.contains("id") || !m["id"].is_string())
            continue;
        const std::string id = m["id"].get<std::string>();
        if (!wanted.empty() && id != wanted) {
            listed += (listed.empty() ? "" : ", ") + id;
            continue;
        }
        return {id, positive_count(m, "max_model_len"),
                m.contains("meta") ? positive_count(m["meta"], "n_vocab") : std::nullopt};
    }
    if (wanted.empty())
        throw Error("GET /v1/models lists no model");
    throw Error("the server has no model '" + wanted + "' (it lists: " + (listed.empty() ? "none" : listed) + ")");
}

WorkloadSpec workload_for_server(const BenchClientOptions& options, const ServedModel& model) {
    WorkloadSpec spec = options.workload;
    spec.vocab = model.n_vocab.value_or(options.fallback_vocab);
    if (model.max_model_len)
        spec.max_total = std::min(spec.max_total, *model.max_model_len);
    // Each request asks for exactly its drawn length: with ignore_eos the
    // server generates that many, which is what makes servers comparable.
    spec.oracle_lengths = true;
    return spec;
}

std::string chat_prompt_text(const std::vector<TokenId>& prompt) {
    static constexpr const char* kWords[] = {
        "the",   "time",  "people", "year",  "way",   "day",   "man",   "thing", "woman", "life",  "child",
        "world", "school", "state", "family", "group", "country", "problem", "hand", "part", "place", "case",
        "week",  "company", "system", "program", "question", "work", "number", "night", "point", "home",
        "water", "room",  "mother", "area",  "money", "story", "fact",  "month", "lot",   "right", "study",
        "book",  "eye",   "job",   "word",  "business", "issue", "side", "kind",  "head",  "house", "service",
        "friend", "father", "power", "hour", "game",  "line",  "end",   "member", "law",  "car"};
    std::string text;
    for (std::size_t i = 1; i < prompt.size(); ++i) {
        if (!text.empty())
            text += ' ';
        text += kWords[static_cast<std::size_t>(prompt[i]) % std::size(kWords)];
    }
    return text;
}

nlohmann::json request_body(const WorkloadRequest& request, BenchApi api, const std::string& model) {
    nlohmann::json body{{"model", model},
                        {"max_tokens", request.max_new_tokens},
                        {"ignore_eos", true},
                        {"temperature", 0},
                        {"stream", true},
                        {"stream_options", {{"include_usage", true}}}};
    if (api == BenchApi::Chat)
        body["messages"] = nlohmann::json::array({{{"role", "user"}, {"content", chat_prompt_text(request.prompt)}}});
    else
        body["prompt"] = request.prompt;
    return body;
}

bool ResponseStream::feed(std::string_view bytes, BenchClock::time_point now) {
    if (status_ >= 400) {
        error_body_.append(bytes); // an error body is small: the server wrote it whole
        return true;
    }
    reader_.feed(bytes, [&](const SseField& f) { on_field(f, now); });
    return error_.empty();
}

void ResponseStream::fail(std::string message) {
    if (error_.empty())
        error_ = std::move(message);
}

void ResponseStream::on_field(const SseField& field, BenchClock::time_point now) {
    if (done_) {
        fail("the server sent more after data: [DONE]: " + std::string(field.name));
        return;
    }
    if (field.name == "error") { // llama.cpp's server reports a failure mid-stream as "error: {json}"
        fail("error event: " + error_message(field.value));
        return;
    }
    if (field.name != "data") // event:, id:, retry: say nothing about tokens
        return;
    if (field.value == "[DONE]") {
        done_ = true;
        return;
    }
    const nlohmann::json chunk = nlohmann::json::parse(field.value, nullptr, false);
    if (!chunk.is_object()) {
        fail("a stream chunk is not a JSON object: " + std::string(field.value.substr(0, kErrorQuote)));
        return;
    }
    if (chunk.contains("error")) { // vLLM's mid-stream error
        fail("error event: " + error_message(field.value));
        return;
    }
    try {
        on_chunk(chunk, now);
    } catch (const nlohmann::json::exception& e) {
        fail(std::string("a stream chunk has a field of the wrong type: ") + e.what());
    }
}

void ResponseStream::on_chunk(const nlohmann::json& chunk, BenchClock::time_point now) {
    if (chunk.contains("usage") && chunk["usage"].is_object()) {
        const nlohmann::json& usage = chunk["usage"];
        usage_prompt_ = usage.at("prompt_tokens").get<std::uint32_t>();
        usage_completion_ = usage.at("completion_tokens").get<std::uint32_t>();
    }
    if (!chunk.contains("choices") || !chunk["choices"].is_array() || chunk["choices"].empty())
        return;
    const nlohmann::json& choice = chunk["choices"][0];
    const nlohmann::json* text = nullptr;
    if (api_ == BenchApi::Completions && choice.contains("text"))
        text = &choice["text"];
    if (api_ == BenchApi::Chat && choice.contains("delta") && choice["delta"].contains("content"))
        text = &choice["delta"]["content"];
    if (!text || !text->is_string() || text->get_ref<const std::string&>().empty())
        return;
    if (last_content_)
        outcome_.itl_s.push_back(seconds(now - *last_content_));
    else
        outcome_.ttft_s = seconds(now - sent_);
    last_content_ = now;
    ++content_chunks_;
}

RequestOutcome ResponseStream::finish(BenchClock::time_point now, const std::string& transport_error,
                                      std::uint32_t prompt_tokens_sent) {
    outcome_.e2e_s = seconds(now - sent_);
    if (status_ >= 400)
        outcome_.error = "HTTP " + std::to_string(status_) + ": " + error_message(error_body_);
    else if (!error_.empty())
        outcome_.error = error_;
    else if (!done_ && !transport_error.empty())
        outcome_.error = "the connection failed: " + transport_error;
    else if (!done_)
        outcome_.error = "the stream ended without data: [DONE]";
    outcome_.ok = outcome_.error.empty();
    outcome_.prompt_tokens = usage_prompt_.value_or(prompt_tokens_sent);
    outcome_.output_tokens = usage_completion_.value_or(content_chunks_);
    return outcome_;
}

double BenchClientReport::requests_per_second() const { return per_second(completed, duration_s); }
double BenchClientReport::output_tokens_per_second() const {
    return per_second(static_cast<double>(output_tokens), duration_s);
}
double BenchClientReport::total_tokens_per_second() const {
    return per_second(static_cast<double>(prompt_tokens + output_tokens), duration_s);
}

BenchClientReport summarize(const std::vector<RequestOutcome>& outcomes, double duration_s) {
    BenchClientReport r;
    r.duration_s = duration_s;
    std::vector<double> ttft, itl, e2e;
    for (const RequestOutcome& o : outcomes) {
        if (!o.ok) {
            ++r.failed;
            if (r.first_error.empty())
                r.first_error = o.error;
            continue;
        }
        ++r.completed;
        r.prompt_tokens += o.prompt_tokens;
        r.output_tokens += o.output_tokens;
        ttft.push_back(o.ttft_s);
        itl.insert(itl.end(), o.itl_s.begin(), o.itl_s.end());
        e2e.push_back(o.e2e_s);
    }
    r.ttft_ms = percentiles_of_seconds(ttft);
    r.itl_ms = percentiles_of_seconds(itl);
    r.e2e_ms = percentiles_of_seconds(e2e);
    return r;
}

BenchClientReport run_bench_client(const BenchClientOptions& options) {
    if (options.concurrency == 0)
        throw Error("bench client needs a concurrency of at least 1");
    const ServerAddress address = parse_url(options.url);
    const ServedModel model = query_model(*connect(address, options.api_key), address, options);
    const WorkloadSpec spec = workload_for_server(options, model);
    const std::vector<WorkloadRequest> workload = make_workload(spec);

    std::vector<RequestOutcome> outcomes(workload.size());
    std::atomic<std::size_t> next{0};
    const BenchClock::time_point start = BenchClock::now();
    {
        // std::thread, not std::jthread: libc++ before LLVM 18 has no jthread.
        std::vector<std::thread> workers;
        for (std::size_t i = 0; i < std::min<std::size_t>(options.concurrency, workload.size()); ++i)
            workers.emplace_back([&] {
                const auto client = connect(address, options.api_key);
                for (std::size_t k; (k = next.fetch_add(1)) < workload.size();)
                    outcomes[k] = send_request(*client, address, workload[k], options.api, model.id);
            });
        for (std::thread& worker : workers)
            worker.join();
    }
    BenchClientReport report = summarize(outcomes, seconds(BenchClock::now() - start));
    report.url = options.url;
    report.model = model.id;
    report.api = options.api;
    report.workload = spec;
    report.concurrency = options.concurrency;
    return report;
}

nlohmann::ordered_json to_json(const BenchClientReport& r) {
    nlohmann::ordered_json j{
        {"completed", r.completed},
        {"failed", r.failed},
        {"duration_s", r.duration_s},
        {"requests_per_second", r.requests_per_second()},
        {"output_tokens_per_second", r.output_tokens_per_second()},
        {"total_tokens_per_second", r.total_tokens_per_second()},
        {"ttft_ms", {{"p50", r.ttft_ms.p50_ms}, {"p90", r.ttft_ms.p90_ms}, {"p99", r.ttft_ms.p99_ms}}},
        {"itl_ms", {{"p50", r.itl_ms.p50_ms}, {"p99", r.itl_ms.p99_ms}}},
        {"e2e_ms", {{"p50", r.e2e_ms.p50_ms}, {"p99", r.e2e_ms.p99_ms}}},
        {"prompt_tokens", r.prompt_tokens},
        {"output_tokens", r.output_tokens},
        {"url", r.url},
        {"model", r.model},
        {"api", std::string(to_string(r.api))},
        {"concurrency", r.concurrency},
        {"workload", {{"requests", r.workload.requests},
                      {"lengths", std::string(to_string(r.workload.distribution))},
                      {"max_total", r.workload.max_total},
                      {"vocab", r.workload.vocab},
                      {"seed", r.workload.seed}}}};
    if (!r.first_error.empty())
        j["first_error"] = r.first_error;
    return j;
}

} // namespace kvscope::client
