// kvscope-cli serve as its clients see it: real server processes on
// ephemeral loopback ports, requests through cpp-httplib. Outputs are
// checked against `kvscope-cli generate`, errors against the OpenAI shape
// and their statuses, and after a load with clients hanging up mid-stream
// /metrics and /kv/snapshot must show an idle engine with every block free.
#include <QtTest>

#include <QProcess>
#include <QTemporaryDir>

#include <atomic>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <csignal>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "cli_runner.h"
#include "net/attach/prometheus_text.h"
#include "support/test_models.h"
#include "support/wait.h"

using kvscope::test::run_cli;
using nlohmann::json;

namespace {

constexpr int kStartTimeoutMs = 60000;

// A `kvscope-cli serve` process; killed if a test leaves it running.
class ServerProcess {
public:
    ServerProcess() = default;
    ServerProcess(const ServerProcess&) = delete;
    ServerProcess& operator=(const ServerProcess&) = delete;
    ~ServerProcess() {
        if (process_.state() != QProcess::NotRunning) {
            process_.kill();
            process_.waitForFinished();
        }
    }

    // Starts it on --port 0; true once its first stdout line gave the URL.
    // Its log goes to `log_path` (a pipe nobody reads would fill and stall it).
    bool start(const QString& model, const QStringList& options, const QString& log_path) {
        process_.setStandardErrorFile(log_path);
        process_.start(QStringLiteral(KVSCOPE_CLI),
                       QStringList{"serve", "--model", model, "--port", "0", "--threads", "1"} + options);
        while (!process_.canReadLine())
            if (!process_.waitForReadyRead(kStartTimeoutMs))
                return false;
        first_line_ = QString::fromUtf8(process_.readLine()).trimmed();
        const QRegularExpressionMatch m =
            QRegularExpression(R"(^kvscope-cli serve: listening on http://([^:]+):(\d+) )"
                               R"(\(model (\S+), (\d+) tokens of context\)$)")
                .match(first_line_);
        if (!m.hasMatch())
            return false;
        host_ = m.captured(1).toStdString();
        port_ = m.captured(2).toInt();
        return true;
    }

    httplib::Client client() const {
        httplib::Client c(host_, port_);
        c.set_read_timeout(60, 0);
        return c;
    }

    // SIGTERM; the exit code once it has drained (-1: it did not exit).
    int terminate() {
        process_.terminate();
        if (!process_.waitForFinished(60000))
            return -1;
        return process_.exitStatus() == QProcess::NormalExit ? process_.exitCode() : -1;
    }

    const QString& first_line() const { return first_line_; }
    const std::string& host() const { return host_; }
    int port() const { return port_; }

private:
    QProcess process_;
    QString first_line_;
    std::string host_;
    int port_ = 0;
};

struct Reply {
    int status = 0; // 0: no response
    httplib::Error error = httplib::Error::Success;
    std::string body;
    std::string content_type;
    json json_body() const { return json::parse(body, nullptr, false); }
};

Reply reply_of(const httplib::Result& r) {
    if (!r)
        return {0, r.error(), {}, {}};
    return {r->status, httplib::Error::Success, r->body, r->get_header_value("Content-Type")};
}

Reply post(httplib::Client& c, const std::string& path, const std::string& body, const httplib::Headers& headers = {}) {
    return reply_of(c.Post(path.c_str(), headers, body, "application/json"));
}

Reply get(httplib::Client& c, const std::string& path, const httplib::Headers& headers = {}) {
    return reply_of(c.Get(path.c_str(), headers));
}

// The data of each server-sent event, in order.
std::vector<std::string> sse_data(const std::string& stream) {
    std::vector<std::string> events;
    std::size_t at = 0;
    for (std::size_t end; (end = stream.find("\n\n", at)) != std::string::npos; at = end + 2) {
        const std::string event = stream.substr(at, end - at);
        if (event.starts_with("data: "))
            events.push_back(event.substr(6));
    }
    return events;
}

// The OpenAI error shape with this status (and this param, when given).
bool is_error(const Reply& r, int status, const char* param = nullptr) {
    const json j = r.json_body();
    if (r.status != status || !j.is_object() || !j.contains("error")) {
        qWarning("expected error %d, got %d: %s", status, r.status, r.body.c_str());
        return false;
    }
    const json& e = j["error"];
    const bool shaped = e.value("message", "") != "" && e.value("type", "") != "" && e.contains("param") &&
                        e.value("code", 0) == status;
    const bool param_ok = !param || (e["param"].is_string() && e["param"] == param);
    if (!shaped || !param_ok)
        qWarning("malformed error: %s", r.body.c_str());
    return shaped && param_ok;
}

kvscope::attach::PromText metrics_of(httplib::Client& c) {
    return kvscope::attach::parse_prometheus_text(get(c, "/metrics").body);
}

// /metrics once the engine has nothing in flight: in-flight cancellations
// and the idle snapshot take a moment to reach it (the last scrape when
// that never happens; the caller's checks then say what is left).
kvscope::attach::PromText idle_metrics(httplib::Client& c) {
    kvscope::attach::PromText m;
    kvscope::test::wait_until([&] {
        m = metrics_of(c);
        return m.value("kvscope:num_requests_running") == 0 && m.value("kvscope:num_requests_waiting") == 0 &&
               m.value("kvscope:kv_cache_usage_perc") == 0;
    });
    return m;
}

std::string completion_body(const json& prompt, int max_tokens, json extra = json::object()) {
    extra["prompt"] = prompt;
    extra["max_tokens"] = max_tokens;
    extra["temperature"] = 0;
    return extra.dump();
}

} // namespace

class TestCliServe : public QObject {
    Q_OBJECT
private slots:
    void initTestCase();
    void cleanupTestCase();
    void first_line_health_and_models();
    void a_taken_port_is_an_error();
    void a_missing_model_is_an_error();
    void completions_equal_generate();
    void stream_arrives_chunk_by_chunk();
    void chat_needs_a_template();
    void chat_with_a_template();
    void chat_over_the_context_is_fitted();
    void tokenize_and_detokenize();
    void kv_snapshot_and_stream();
    void error_matrix();
    void api_key_guards_all_but_health_and_metrics();
    void overload_answers_503_and_sigterm_drains();
    void load_with_hang_ups_frees_every_block();
    void non_streamed_request_ends_when_its_client_leaves();
    void access_log_has_a_line_per_request();

private:
    QString llama_110m();

    QString model_;
    QString llama_110m_;
    QTemporaryDir dir_;
    ServerProcess server_;
};

void TestCliServe::initTestCase() {
    model_ = kvscope::test::test_model_path(QStringLiteral("stories260K-f32.gguf"));
    if (model_.isEmpty())
        QSKIP("shared models folder is absent");
    QVERIFY(dir_.isValid());
    QVERIFY2(server_.start(model_, {"--kv-dtype", "f32", "--kv-budget-mib", "16"}, dir_.filePath("main.log")),
             qPrintable(server_.first_line()));
}

void TestCliServe::cleanupTestCase() {
    if (!model_.isEmpty())
        QCOMPARE(server_.terminate(), 0);
}

// A synthetic llama-110m (random weights, a few ms a token) with a ChatML
// template, made on first use; empty when make-model failed.
QString TestCliServe::llama_110m() {
    if (!llama_110m_.isEmpty())
        return llama_110m_;
    const QString template_path = dir_.filePath("chatml.jinja");
    QFile file(template_path);
    if (!file.open(QIODevice::WriteOnly))
        return {};
    file.write("{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + "
               "'<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% "
               "endif %}");
    file.close();
    const QString path = dir_.filePath("llama-110m.gguf");
    const auto made = run_cli({"--log-level", "warn", "make-model", "--preset", "llama-110m", "--type", "q4_0",
                               "--chat-template", template_path, "-o", path});
    if (made.exit_code != 0)
        qWarning("make-model: %s", made.err.constData());
    return llama_110m_ = made.exit_code == 0 ? path : QString();
}

void TestCliServe::first_line_health_and_models() {
    QCOMPARE(server_.first_line(), QStringLiteral("kvscope-cli serve: listening on http://127.0.0.1:%1 (model "
                                                  "stories260K-f32, 512 tokens of context)")
                                       .arg(server_.port()));
    auto c = server_.client();
    const Reply health = get(c, "/health");
    QCOMPARE(health.status, 200);
    QCOMPARE(health.json_body(), json({{"status", "ok"}}));
    const json models = get(c, "/v1/models").json_body();
    QCOMPARE(models["object"], "list");
    QCOMPARE(models["data"].size(), 1u);
    QCOMPARE(models["data"][0]["id"], "stories260K-f32");
    QCOMPARE(models["data"][0]["max_model_len"], 512);
}

// Not shared with the server already there (httplib's SO_REUSEPORT would).
void TestCliServe::a_taken_port_is_an_error() {
    const auto r = run_cli({"serve", "--model", model_, "--port", QString::number(server_.port())});
    QCOMPARE(r.exit_code, 1);
    QVERIFY2(r.err.contains("cannot listen on 127.0.0.1:"), r.err.constData());
    QVERIFY(r.out.isEmpty());
}

// The model loads after the server listens: a load that fails must still
// stop it and exit (it used to hang, deaf to SIGTERM).
void TestCliServe::a_missing_model_is_an_error() {
    const auto r = run_cli({"serve", "--model", "/nonexistent/model.gguf", "--port", "0"});
    QCOMPARE(r.exit_code, 1);
    QVERIFY2(r.err.contains("/nonexistent/model.gguf: cannot open"), r.err.constData());
    QVERIFY(r.out.isEmpty());
}

void TestCliServe::completions_equal_generate() {
    const auto g = run_cli({"--log-level", "warn", "generate", "--model", model_, "--prompt", "Once upon a time", "-n",
                            "24", "--kv-dtype", "f32", "--json"});
    QCOMPARE(g.exit_code, 0);
    const json expected = json::parse(g.out.toStdString());
    auto c = server_.client();
    for (const json& prompt : {json("Once upon a time"), expected["prompt_token_ids"]}) {
        const Reply r = post(c, "/v1/completions", completion_body(prompt, 24, {{"model", "stories260K-f32"}}));
        QCOMPARE(r.status, 200);
        const json j = r.json_body();
        QCOMPARE(j["object"], "text_completion");
        QCOMPARE(j["model"], "stories260K-f32");
        QCOMPARE(j["choices"][0]["text"], expected["text"]);
        QCOMPARE(j["usage"]["prompt_tokens"], expected["prompt_token_ids"].size());
        QCOMPARE(j["usage"]["completion_tokens"], expected["generated_token_ids"].size());
        QCOMPARE(j["usage"]["total_tokens"],
                 expected["prompt_token_ids"].size() + expected["generated_token_ids"].size());
    }
}

void TestCliServe::stream_arrives_chunk_by_chunk() {
    auto c = server_.client();
    const std::string prompt = "Once upon a time";
    const json whole = post(c, "/v1/completions", completion_body(prompt, 16)).json_body();
    const Reply r = post(c, "/v1/completions",
                         completion_body(prompt, 16,
                                         {{"stream", true}, {"stream_options", {{"include_usage", true}}}}));
    QCOMPARE(r.status, 200);
    QVERIFY(r.content_type.starts_with("text/event-stream"));
    const std::vector<std::string> events = sse_data(r.body);
    QVERIFY(events.size() >= 4);
    QCOMPARE(events.back(), "[DONE]");
    const json usage = json::parse(events[events.size() - 2]);
    QCOMPARE(usage["choices"], json::array());
    QCOMPARE(usage["usage"], whole["usage"]);
    std::string text;
    std::string id;
    for (std::size_t i = 0; i + 2 < events.size(); ++i) {
        const json chunk = json::parse(events[i]);
        QCOMPARE(chunk["object"], "text_completion");
        if (id.empty())
            id = chunk["id"];
        QCOMPARE(chunk["id"], id); // one response
        QCOMPARE(chunk["choices"].size(), 1u);
        const json& choice = chunk["choices"][0];
        const bool last = i + 3 == events.size();
        QCOMPARE(choice["finish_reason"].is_null(), !last); // the finish reason comes last, once
        text += choice["text"].get<std::string>();
    }
    const json last_choice = json::parse(events[events.size() - 3])["choices"][0];
    QCOMPARE(last_choice["finish_reason"], whole["choices"][0]["finish_reason"]);
    QCOMPARE(text, whole["choices"][0]["text"].get<std::string>());
}

void TestCliServe::chat_needs_a_template() {
    auto c = server_.client();
    const Reply r = post(c, "/v1/chat/completions", R"({"messages":[{"role":"user","content":"hi"}]})");
    QVERIFY(is_error(r, 400, "messages"));
    QVERIFY(r.json_body()["error"]["message"].get<std::string>().find("/v1/completions") != std::string::npos);
}

void TestCliServe::chat_with_a_template() {
    const QString chat_model = llama_110m();
    QVERIFY(!chat_model.isEmpty());
    ServerProcess chat;
    QVERIFY(chat.start(chat_model, {"--kv-budget-mib", "16"}, dir_.filePath("chat.log")));
    auto c = chat.client();
    const std::string body =
        R"({"messages":[{"role":"system","content":"Be brief."},)"
        R"({"role":"user","content":[{"type":"text","text":"hi"}]}],)"
        R"("max_tokens":3,"temperature":0,"ignore_eos":true})";
    const Reply r = post(c, "/v1/chat/completions", body);
    QCOMPARE(r.status, 200);
    const json j = r.json_body();
    QCOMPARE(j["object"], "chat.completion");
    QCOMPARE(j["choices"][0]["message"]["role"], "assistant");
    QVERIFY(j["choices"][0]["message"]["content"].is_string());
    QCOMPARE(j["usage"]["completion_tokens"], 3);
    json stream_body = json::parse(body);
    stream_body["stream"] = true;
    const std::vector<std::string> events = sse_data(post(c, "/v1/chat/completions", stream_body.dump()).body);
    QVERIFY(events.size() >= 3);
    QCOMPARE(json::parse(events.front())["object"], "chat.completion.chunk");
    QCOMPARE(json::parse(events.front())["choices"][0]["delta"]["role"], "assistant"); // the role first
    QCOMPARE(events.back(), "[DONE]");
    QCOMPARE(chat.terminate(), 0);
}

void TestCliServe::chat_over_the_context_is_fitted() {
    // llama-15m (256 tokens of context, random weights) with the same ChatML
    // template: a history past the context loses its oldest exchanges, a
    // reply past the room left is limited, and the response says so.
    const QString chatml = dir_.filePath("chatml.jinja");
    if (!QFile::exists(chatml))
        QVERIFY(!llama_110m().isEmpty()); // writes the template
    const QString path = dir_.filePath("llama-15m-chat.gguf");
    const auto made = run_cli({"--log-level", "warn", "make-model", "--preset", "llama-15m", "--type", "q4_0",
                               "--chat-template", chatml, "-o", path});
    QVERIFY2(made.exit_code == 0, made.err.constData());
    ServerProcess chat;
    QVERIFY(chat.start(path, {"--kv-budget-mib", "16"}, dir_.filePath("chat15m.log")));
    auto c = chat.client();
    json messages = json::array({{{"role", "system"}, {"content", "Be brief."}}});
    for (int i = 0; i < 8; ++i) {
        messages.push_back({{"role", "user"}, {"content", "Tell me story number " + std::to_string(i) + "."}});
        messages.push_back({{"role", "assistant"}, {"content", "Once upon a time there was a little dog. The end."}});
    }
    messages.push_back({{"role", "user"}, {"content", "Another one?"}});
    const json tokenized = post(c, "/tokenize", json{{"messages", messages}}.dump()).json_body();
    QVERIFY2(tokenized["count"].get<int>() > 256, tokenized.dump().c_str());

    json body = {{"messages", messages}, {"max_tokens", 200}, {"temperature", 0}, {"ignore_eos", true}};
    const Reply r = post(c, "/v1/chat/completions", body.dump());
    QVERIFY2(r.status == 200, r.body.c_str());
    const json j = r.json_body();
    const json& context = j["kvscope_context"];
    QVERIFY2(context.is_object(), r.body.c_str());
    const int dropped = context["dropped_messages"].get<int>();
    const int limit = context["reply_limit"].get<int>();
    QVERIFY(dropped > 0 && dropped % 2 == 0);
    QVERIFY(limit > 0 && limit < 200);
    QCOMPARE(context["note"].get<std::string>(),
             "The conversation outgrew the model's context: its oldest " + std::to_string(dropped) +
                 " messages were left out (the system prompt stays). The reply was limited to " +
                 std::to_string(limit) + " tokens: all the room the context had left.");
    QCOMPARE(j["usage"]["completion_tokens"].get<int>(), limit);
    QCOMPARE(j["usage"]["total_tokens"].get<int>(), 256);
    QCOMPARE(j["choices"][0]["finish_reason"], "length");

    // Streamed: the first chunk says the same.
    body["stream"] = true;
    const std::vector<std::string> events = sse_data(post(c, "/v1/chat/completions", body.dump()).body);
    QVERIFY(events.size() >= 3);
    QCOMPARE(json::parse(events.front())["kvscope_context"], context);
    QVERIFY(!json::parse(events[1]).contains("kvscope_context"));

    // A short history that fits: nothing said.
    const json fits = {{"messages", json::array({messages.front(), messages.back()})}, {"max_tokens", 2}};
    const Reply plain = post(c, "/v1/chat/completions", fits.dump());
    QCOMPARE(plain.status, 200);
    QVERIFY(!plain.json_body().contains("kvscope_context"));

    // A last message that alone fills the context: 400, in vLLM's words.
    std::string question;
    for (int i = 0; i < 40; ++i)
        question += "Tell me a story about a dog. ";
    messages.back()["content"] = question;
    const Reply refused = post(c, "/v1/chat/completions", json{{"messages", messages}, {"max_tokens", 8}}.dump());
    QVERIFY2(is_error(refused, 400, "max_tokens"), refused.body.c_str());
    QVERIFY(refused.json_body()["error"]["message"].get<std::string>().find("maximum context length is 256") !=
            std::string::npos);
    QCOMPARE(chat.terminate(), 0);
}

void TestCliServe::tokenize_and_detokenize() {
    auto c = server_.client();
    const json ids = post(c, "/tokenize", R"({"prompt":"Once upon a time"})").json_body();
    QCOMPARE(ids["tokens"], json({1, 403, 407, 261, 378}));
    QCOMPARE(ids["count"], 5);
    QCOMPARE(ids["max_model_len"], 512);
    const json text = post(c, "/detokenize", json({{"tokens", ids["tokens"]}}).dump()).json_body();
    QCOMPARE(text["prompt"], "Once upon a time");
}

// The KV feeds describe blocks and sequences by counts and ids: no prompt
// text, no token ids, nothing derived from the tokens (block hashes).
void TestCliServe::kv_snapshot_and_stream() {
    auto c = server_.client();
    const Reply r = get(c, "/kv/snapshot");
    QCOMPARE(r.status, 200);
    const json snapshot = r.json_body();
    QVERIFY(snapshot.contains("schema_version"));
    QVERIFY(snapshot["pool"]["blocks"].size() > 0);
    std::function<void(const json&)> no_tokens = [&](const json& j) {
        if (j.is_object())
            for (const auto& [key, value] : j.items()) {
                QVERIFY2(key != "tokens" && key != "token_ids" && key != "text" && key != "prompt" &&
                             key.find("hash") == std::string::npos,
                         key.c_str());
                no_tokens(value);
            }
        else if (j.is_array())
            for (const json& v : j)
                no_tokens(v);
    };
    no_tokens(snapshot);

    std::string received;
    auto feed = server_.client();
    feed.Get("/kv/stream", [&](const char* data, std::size_t length) {
        received.append(data, length);
        return sse_data(received).empty(); // hang up after the first snapshot
    });
    const std::vector<std::string> events = sse_data(received);
    QCOMPARE(events.size(), 1u);
    QCOMPARE(json::parse(events[0])["schema_version"], snapshot["schema_version"]);
    QCOMPARE(get(c, "/health").status, 200);
}

void TestCliServe::error_matrix() {
    auto c = server_.client();
    const std::string path = "/v1/completions";
    QVERIFY(is_error(post(c, path, R"({"prompt": "Once", )"), 400));
    QVERIFY(is_error(post(c, path, R"([1, 2])"), 400));
    QVERIFY(is_error(post(c, path, R"({"prompt": "Once", "max_tokens": "8"})"), 400, "max_tokens"));
    QVERIFY(is_error(post(c, path, R"({"prompt": 42})"), 400, "prompt"));
    QVERIFY(is_error(post(c, path, R"({"prompt": "Once", "max_tokens": 0})"), 400, "max_tokens"));
    QVERIFY(is_error(post(c, path, R"({"prompt": "Once", "max_tokens": 600})"), 400, "max_tokens"));
    QVERIFY(is_error(post(c, path, R"({"prompt": [1, 403, 512], "max_tokens": 4})"), 400, "prompt"));
    QVERIFY(is_error(post(c, path, R"({"prompt": [1, -1], "max_tokens": 4})"), 400, "prompt"));
    QVERIFY(is_error(post(c, path, R"({"prompt": "Once", "max_tokens": 4, "n": 129})"), 400, "n"));
    QVERIFY(is_error(post(c, path, "{\"prompt\": \"Once \xff\xfe\", \"max_tokens\": 4}"), 400));
    QVERIFY(is_error(post(c, path, R"({"prompt": "Once", "model": "gpt-4"})"), 404, "model"));
    QVERIFY(is_error(get(c, "/v1/nothing"), 404));
    QVERIFY(is_error(get(c, path), 404)); // the route is POST only
    QVERIFY(is_error(post(c, path, completion_body(std::string(9u << 20, 'a'), 4)), 413));
    const Reply health = get(c, "/health");
    QCOMPARE(health.status, 200);
    // Unknown fields are ignored.
    QCOMPARE(post(c, path, completion_body("Once", 2, {{"logit_bias", json::object()}, {"user", "x"}})).status, 200);
}

void TestCliServe::api_key_guards_all_but_health_and_metrics() {
    ServerProcess keyed;
    QVERIFY(keyed.start(model_, {"--api-key", "s3cret", "--metrics-names", "vllm"}, dir_.filePath("keyed.log")));
    auto c = keyed.client();
    const httplib::Headers good{{"Authorization", "Bearer s3cret"}};
    const httplib::Headers wrong{{"Authorization", "Bearer s3cre"}};
    QVERIFY(is_error(get(c, "/v1/models"), 401));
    QVERIFY(is_error(get(c, "/v1/models", wrong), 401));
    QVERIFY(is_error(post(c, "/v1/completions", completion_body("Once", 2)), 401));
    QVERIFY(is_error(post(c, "/tokenize", R"({"prompt":"Once"})", wrong), 401));
    QVERIFY(is_error(post(c, "/detokenize", R"({"tokens":[1]})"), 401));
    QVERIFY(is_error(get(c, "/kv/snapshot"), 401));
    QCOMPARE(get(c, "/v1/models", good).status, 200);
    QCOMPARE(post(c, "/v1/completions", completion_body("Once", 2), good).status, 200);
    QCOMPARE(get(c, "/health").status, 200);
    const Reply metrics = get(c, "/metrics");
    QCOMPARE(metrics.status, 200);
    QVERIFY(metrics.content_type.starts_with("text/plain; version=0.0.4"));
    const kvscope::attach::PromText m = kvscope::attach::parse_prometheus_text(metrics.body);
    QVERIFY(m.has("vllm:num_requests_running"));
    QVERIFY(m.has("vllm:kv_cache_usage_perc"));
    QVERIFY(m.has("kvscope:num_requests_running"));
    QCOMPARE(keyed.terminate(), 0);
    auto plain = server_.client();
    QVERIFY(!metrics_of(plain).has("vllm:num_requests_running")); // only when asked
}

// One sequence at a time and one waiting place: while two clients keep a
// request each in flight (one running, one waiting), a third is refused.
// SIGTERM then aborts what is in flight within the drain time; those
// streams still end with [DONE], and the server exits 0.
void TestCliServe::overload_answers_503_and_sigterm_drains() {
    ServerProcess busy;
    QVERIFY(busy.start(model_, {"--max-seqs", "1", "--max-waiting", "1", "--drain-seconds", "1"},
                       dir_.filePath("busy.log")));
    std::vector<int> prompt(400, 261);
    prompt[0] = 1;
    const std::string body = completion_body(prompt, 100, {{"stream", true}, {"ignore_eos", true}});
    std::vector<std::string> last_streams(2); // each client's last reply with status 200
    std::atomic<bool> stopping{false};
    auto keep_one_in_flight = [&](int i) {
        auto c = busy.client();
        for (;;) {
            std::string received;
            httplib::Request req;
            req.method = "POST";
            req.path = "/v1/completions";
            req.body = body;
            req.set_header("Content-Type", "application/json");
            req.content_receiver = [&](const char* data, std::size_t length, std::uint64_t, std::uint64_t) {
                received.append(data, length);
                return true;
            };
            const httplib::Result r = c.send(req);
            if (r && r->status == 200)
                last_streams[i] = received;
            else if (stopping)
                return; // refused while draining, or the server is gone
        }
    };
    std::thread first(keep_one_in_flight, 0);
    std::thread second(keep_one_in_flight, 1);
    auto c = busy.client();
    Reply refused;
    for (int tries = 0; tries < 500 && refused.status != 503; ++tries)
        refused = post(c, "/v1/completions", completion_body(prompt, 8));
    stopping = true;
    const int exit_code = busy.terminate();
    first.join();
    second.join();
    QVERIFY(is_error(refused, 503));
    QCOMPARE(refused.json_body()["error"]["type"], "service_unavailable");
    QCOMPARE(exit_code, 0);
    QVERIFY(!last_streams[0].empty() || !last_streams[1].empty());
    for (const std::string& s : last_streams) // a client refused before its first success has none
        QVERIFY2(s.empty() || s.ends_with("data: [DONE]\n\n"), s.c_str());
}

void TestCliServe::load_with_hang_ups_frees_every_block() {
    constexpr int kRequests = 1000;
    constexpr int kClients = 64;
    std::atomic<int> next{0}, ok{0}, hung_up{0}, failed{0};
    auto client_loop = [&](unsigned seed) {
        std::mt19937 random(seed);
        auto c = server_.client();
        for (int i; (i = next++) < kRequests;) {
            std::vector<int> prompt(4 + random() % 40);
            for (int& id : prompt)
                id = 3 + static_cast<int>(random() % 500);
            if (i % 5 == 0) { // hangs up after the first chunk, on a connection of its own
                auto leaving = server_.client();
                httplib::Request req;
                req.method = "POST";
                req.path = "/v1/completions";
                req.body = completion_body(prompt, 200, {{"stream", true}, {"ignore_eos", true}});
                req.set_header("Content-Type", "application/json");
                req.content_receiver = [](const char*, std::size_t, std::uint64_t, std::uint64_t) { return false; };
                leaving.send(req);
                ++hung_up;
                continue;
            }
            const bool stream = i % 2 == 0;
            const Reply r = post(c, "/v1/completions",
                                 completion_body(prompt, 4 + static_cast<int>(random() % 12),
                                                 {{"stream", stream}, {"ignore_eos", true}}));
            const bool complete = r.status == 200 && (!stream || r.body.ends_with("data: [DONE]\n\n"));
            if (!complete)
                qWarning("request %d failed: status %d (%s), %s", i, r.status, httplib::to_string(r.error).c_str(),
                         r.body.substr(0, 300).c_str());
            ++(complete ? ok : failed);
        }
    };
    std::vector<std::thread> clients;
    for (unsigned k = 0; k < kClients; ++k)
        clients.emplace_back(client_loop, k);
    for (std::thread& t : clients)
        t.join();
    QCOMPARE(failed.load(), 0);
    QCOMPARE(ok.load() + hung_up.load(), kRequests);

    auto c = server_.client();
    const kvscope::attach::PromText m = idle_metrics(c);
    QCOMPARE(m.value("kvscope:num_requests_running"), 0.0);
    QCOMPARE(m.value("kvscope:num_requests_waiting"), 0.0);
    QCOMPARE(m.value("kvscope:kv_cache_usage_perc"), 0.0);
    const auto* info = m.find("kvscope:cache_config_info").front();
    QCOMPARE(m.value("kvscope:kv_free_blocks"), std::stod(info->labels.at("num_gpu_blocks"))); // cached ones included
    QVERIFY(m.value("kvscope:request_success_total", {{"finished_reason", "abort"}}) > 0);
    QVERIFY(m.value("kvscope:request_success_total", {{"finished_reason", "length"}}) >= ok.load());
    QVERIFY(m.value("kvscope:generation_tokens_total") > 4 * ok.load());
    QVERIFY(m.value("kvscope:prompt_tokens_total") > 0);
    QVERIFY(m.value("kvscope:e2e_request_latency_seconds_count") >= ok.load());
    const json snapshot = get(c, "/kv/snapshot").json_body();
    for (const json& block : snapshot["pool"]["blocks"])
        QVERIFY(block["state"] == "free" || block["state"] == "cached_free");
    QCOMPARE(get(c, "/health").status, 200);
}

// A reply that is not streamed writes nothing until it is complete; its
// client giving up must still abort it. llama-110m (random weights, a few
// ms a token) with ignore_eos runs 1,000 tokens for seconds; the client
// waits 300 ms.
void TestCliServe::non_streamed_request_ends_when_its_client_leaves() {
    const QString slow_model = llama_110m();
    QVERIFY(!slow_model.isEmpty());
    ServerProcess slow;
    QVERIFY(slow.start(slow_model, {"--kv-budget-mib", "64"}, dir_.filePath("slow.log")));
    auto leaving = slow.client();
    leaving.set_read_timeout(0, 300000);
    const Reply r =
        post(leaving, "/v1/completions", completion_body(json::array({1, 2, 3}), 1000, {{"ignore_eos", true}}));
    QCOMPARE(r.status, 0); // gave up
    leaving.stop();
    auto c = slow.client();
    const kvscope::attach::PromText m = idle_metrics(c);
    QCOMPARE(m.value("kvscope:request_success_total", {{"finished_reason", "abort"}}), 1.0);
    QCOMPARE(m.value("kvscope:request_success_total", {{"finished_reason", "length"}}), 0.0);
    QCOMPARE(m.value("kvscope:kv_cache_usage_perc"), 0.0);
    QCOMPARE(slow.terminate(), 0);
}

void TestCliServe::access_log_has_a_line_per_request() {
    auto c = server_.client();
    QCOMPARE(post(c, "/v1/completions", completion_body("Once upon a time", 3, {{"ignore_eos", true}})).status, 200);
    // The line is written once the reply is out: until it is in the log.
    const QByteArray line = "POST /v1/completions 200 tokens in 5 out 3 ttft_ms ";
    QByteArray text;
    kvscope::test::wait_until([&] {
        QFile log(dir_.filePath("main.log"));
        text = log.open(QIODevice::ReadOnly) ? log.readAll() : QByteArray();
        return text.contains(line);
    });
    QVERIFY2(text.contains(line), text.right(2000).constData());
    QVERIFY(text.contains("GET /v1/nothing 404 tokens in - out - ttft_ms - total_ms "));
}

QTEST_GUILESS_MAIN(TestCliServe)
#include "test_cli_serve.moc"
