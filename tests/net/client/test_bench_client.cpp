// bench client (net/client/bench_client.h, sse_reader.h): the SSE line reader,
// the stream parser alone, then whole runs against an
// in-test OpenAI-style streaming server on a loopback port.
#include <QtTest>

#include <httplib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <thread>

#include "net/client/bench_client.h"
#include "engine/core/error.h"
#include "support/wait.h"

using namespace kvscope;
using namespace kvscope::client;

namespace {

std::vector<std::string> read_lines(const std::vector<std::string>& pieces) {
    SseReader reader;
    std::vector<std::string> got;
    for (const std::string& p : pieces)
        reader.feed(p, [&](const SseField& f) { got.push_back(std::string(f.name) + "=" + std::string(f.value)); });
    return got;
}

// What a request's prompt asks the mock to do: fail in one of four ways,
// or stream normally. Chosen by content so the test can count from the
// workload what should fail.
enum class Fate { ServerError, NoDone, ErrorEvent, Broken, Ok };
Fate fate_of(const std::vector<TokenId>& prompt) {
    switch (prompt.at(1) % 8) {
    case 0: return Fate::ServerError;
    case 1: return Fate::NoDone;
    case 2: return Fate::ErrorEvent;
    case 3: return Fate::Broken;
    default: return Fate::Ok;
    }
}

// An OpenAI-compatible streaming server in miniature: /v1/models with
// max_model_len and meta.n_vocab; /v1/completions streaming two tokens per
// chunk (so the usage chunk, not the chunk count, gives the output tokens),
// ": ping" comments, lines ending in "\n" or "\r\n"; /v1/chat/completions a
// role chunk, one token per chunk and no usage. It records every body and
// the most streams it held at once; told to, it holds each stream's first
// chunk until that many streams have been open at once.
class MockServer {
public:
    static constexpr std::uint32_t kVocab = 500;
    static constexpr std::uint32_t kMaxModelLen = 200;

    MockServer() {
        server_.Get("/v1/models", [](const httplib::Request&, httplib::Response& res) {
            res.set_content(nlohmann::json{{"object", "list"},
                                           {"data", {{{"id", "mock-model"},
                                                      {"object", "model"},
                                                      {"max_model_len", kMaxModelLen},
                                                      {"meta", {{"n_vocab", kVocab}}}}}}}
                                .dump(),
                            "application/json");
        });
        server_.Post("/v1/completions",
                     [this](const httplib::Request& req, httplib::Response& res) { stream(req, res, false); });
        server_.Post("/v1/chat/completions",
                     [this](const httplib::Request& req, httplib::Response& res) { stream(req, res, true); });
        port_ = server_.bind_to_any_port("127.0.0.1");
        thread_ = std::thread([this] { server_.listen_after_bind(); });
    }
    ~MockServer() {
        server_.stop();
        thread_.join();
    }
    std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
    std::vector<nlohmann::json> bodies() {
        std::lock_guard lock(mutex_);
        return bodies_;
    }
    int most_streams() const { return most_streams_; }
    // From now on a stream sends its first chunk only once `streams` have
    // been open at once (or the deadlock guard passes): they overlap
    // whatever the machine's speed.
    void overlap(int streams) { overlap_ = streams; }

private:
    void stream(const httplib::Request& req, httplib::Response& res, bool chat) {
        const nlohmann::json body = nlohmann::json::parse(req.body);
        {
            std::lock_guard lock(mutex_);
            bodies_.push_back(body);
        }
        const Fate fate = chat ? Fate::Ok : fate_of(body["prompt"].get<std::vector<TokenId>>());
        if (fate == Fate::ServerError) {
            res.status = 500;
            res.set_content(R"({"error":{"message":"mock failure","type":"server_error","param":null,"code":500}})",
                            "application/json");
            return;
        }
        const int now = ++streams_;
        for (int most = most_streams_; now > most && !most_streams_.compare_exchange_weak(most, now);) {
        }
        // A stream stops counting before its last bytes go out: a client
        // that sees its end may open another connection at once, before
        // this thread gets back from writing.
        auto ended = std::make_shared<std::atomic<bool>>(false);
        auto end = [this, ended] {
            if (!ended->exchange(true))
                --streams_;
        };
        const auto tokens = body["max_tokens"].get<std::uint32_t>();
        const auto prompt_len = chat ? 0u : static_cast<std::uint32_t>(body["prompt"].size());
        res.set_chunked_content_provider(
            "text/event-stream",
            [=, this, sent = 0u](std::size_t, httplib::DataSink& sink) mutable {
                if (sent == 0)
                    kvscope::test::wait_until([this] { return most_streams_ >= overlap_; });
                if (sent == 0 && !chat)
                    write(sink, ": ping\n\n");
                if (chat && sent == 0)
                    write(sink, R"(data: {"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]})" "\n\n");
                const std::uint32_t step = chat ? 1 : 2;
                if (sent < tokens) {
                    const std::uint32_t n = std::min(step, tokens - sent);
                    sent += n;
                    const std::string text(n, 'x');
                    const std::string choice = chat ? R"({"index":0,"delta":{"content":")" + text + "\"}}"
                                                    : R"({"index":0,"text":")" + text + R"(","finish_reason":null})";
                    // every other chunk ends its lines in \r\n; each is written in two pieces
                    const std::string line = "data: {\"choices\":[" + choice + "]}" + (sent % 4 ? "\r\n\r\n" : "\n\n");
                    write(sink, line.substr(0, 9));
                    write(sink, line.substr(9));
                    if (fate == Fate::Broken && sent >= tokens / 2) {
                        end();
                        return false;
                    }
                    return true;
                }
                end();
                if (fate == Fate::ErrorEvent) { // as llama.cpp's server ends a failed stream
                    write(sink, R"(error: {"code":500,"message":"mock error event","type":"server_error"})" "\n\n");
                    sink.done();
                    return true;
                }
                if (!chat)
                    write(sink, "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":" + std::to_string(prompt_len) +
                                    ",\"completion_tokens\":" + std::to_string(tokens) + "}}\n\n");
                if (fate != Fate::NoDone)
                    write(sink, "data: [DONE]\n\n");
                sink.done();
                return true;
            },
            [end](bool) { end(); });
    }
    static void write(httplib::DataSink& sink, const std::string& s) { sink.write(s.data(), s.size()); }

    httplib::Server server_;
    int port_ = 0;
    std::thread thread_;
    std::mutex mutex_;
    std::vector<nlohmann::json> bodies_;
    std::atomic<int> streams_{0}, most_streams_{0}, overlap_{0};
};

BenchClientOptions options_for(const MockServer& server, std::uint32_t requests, std::uint32_t concurrency) {
    BenchClientOptions o;
    o.url = server.url();
    o.workload.requests = requests;
    o.workload.distribution = LengthDistribution::ShareGpt;
    o.workload.max_total = 512; // past the mock's max_model_len: the client caps it
    o.workload.seed = 7;
    o.concurrency = concurrency;
    return o;
}

} // namespace

class TestBenchClient : public QObject {
    Q_OBJECT
private slots:
    void sse_lines_survive_any_split() {
        const std::vector<std::string> want{"data={\"a\":1}", "data=[DONE]"};
        QCOMPARE(read_lines({"data: {\"a\":1}\n\ndata: [DONE]\n\n"}), want);
        QCOMPARE(read_lines({"da", "ta: {\"a\"", ":1}\r", "\n\r\n", "data: [DO", "NE]\r\n"}), want);
        std::vector<std::string> bytes; // one byte at a time
        for (char c : std::string(": ping\r\n\r\ndata: {\"a\":1}\r\n\r\n:\ndata: [DONE]\n"))
            bytes.emplace_back(1, c);
        QCOMPARE(read_lines(bytes), want);
    }

    void sse_fields_are_split_at_the_first_colon() {
        const std::vector<std::string> want{"error={\"message\":\"x: y\"}", "event=", "data=no space", "data="};
        QCOMPARE(read_lines({"error: {\"message\":\"x: y\"}\nevent\ndata:no space\ndata:\n"}), want);
        SseReader reader;
        reader.feed("data: cut", [](const SseField&) { QFAIL("a line without its end is not complete"); });
        QVERIFY(reader.has_partial_line());
    }

    void models_response_gives_name_context_and_vocab() {
        const auto body = nlohmann::json::parse(
            R"({"data":[{"id":"a"},{"id":"b","max_model_len":2048,"meta":{"n_vocab":32000}}]})");
        const ServedModel first = parse_models_response(body, "");
        QCOMPARE(first.id, std::string("a"));
        QVERIFY(!first.max_model_len && !first.n_vocab);
        const ServedModel b = parse_models_response(body, "b");
        QCOMPARE(*b.max_model_len, 2048u);
        QCOMPARE(*b.n_vocab, 32000u);
        QVERIFY_THROWS_EXCEPTION(Error, parse_models_response(body, "c"));
        QVERIFY_THROWS_EXCEPTION(Error, parse_models_response(nlohmann::json::parse(R"({"data":[]})"), ""));
        QVERIFY_THROWS_EXCEPTION(Error, parse_models_response(nlohmann::json::parse("[1]"), ""));
    }

    void stream_counts_content_chunks_without_usage() {
        const auto t0 = BenchClock::now();
        ResponseStream s(BenchApi::Chat, t0);
        s.on_status(200);
        s.feed("data: {\"choices\":[{\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n", t0);
        s.feed("data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n", t0 + std::chrono::milliseconds(10));
        s.feed("data: {\"choices\":[{\"delta\":{\"content\":\"b\"}}]}\n\n", t0 + std::chrono::milliseconds(15));
        s.feed("data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"length\"}]}\n\ndata: [DONE]\n\n",
               t0 + std::chrono::milliseconds(16));
        const RequestOutcome o = s.finish(t0 + std::chrono::milliseconds(20), "", 9);
        QVERIFY(o.ok);
        QCOMPARE(o.output_tokens, 2u); // the role and finish chunks carry no token
        QCOMPARE(o.prompt_tokens, 9u); // what was sent, without a usage chunk
        QCOMPARE(o.ttft_s, 0.010);     // the clock is the caller's: these are exact
        QCOMPARE(o.itl_s.size(), std::size_t(1));
        QCOMPARE(o.itl_s[0], 0.005);
        QCOMPARE(o.e2e_s, 0.020);
    }

    void stream_failures_keep_their_reason() {
        const auto t = BenchClock::now();
        ResponseStream status(BenchApi::Completions, t);
        status.on_status(400);
        status.feed(R"({"error":{"message":"max_tokens must be at least 1"}})", t);
        RequestOutcome o = status.finish(t, "", 1);
        QVERIFY(!o.ok);
        QCOMPARE(o.error, std::string("HTTP 400: max_tokens must be at least 1"));

        ResponseStream vllm(BenchApi::Completions, t);
        vllm.on_status(200);
        vllm.feed("data: {\"error\":{\"message\":\"boom\"}}\n\ndata: [DONE]\n\n", t);
        o = vllm.finish(t, "", 1);
        QCOMPARE(o.error, std::string("error event: boom"));

        ResponseStream endless(BenchApi::Completions, t); // what a server stuck in its last chunk sends
        endless.on_status(200);
        QVERIFY(endless.feed("data: {\"choices\":[{\"text\":\"a\"}]}\n\ndata: [DONE]\n\n", t));
        QVERIFY(!endless.feed("data: [DONE]\n\n", t)); // stop reading
        QVERIFY(endless.finish(t, "Canceled", 1).error.find("after data: [DONE]") != std::string::npos);

        ResponseStream cut(BenchApi::Completions, t);
        cut.on_status(200);
        cut.feed("data: {\"choices\":[{\"text\":\"a\"}]}\n\n", t);
        QVERIFY(!cut.finish(t, "", 1).ok);
        ResponseStream broken(BenchApi::Completions, t);
        broken.on_status(200);
        QVERIFY(broken.finish(t, "Read", 1).error.find("Read") != std::string::npos);
        ResponseStream garbage(BenchApi::Completions, t);
        garbage.on_status(200);
        garbage.feed("data: {\"usage\":{\"prompt_tokens\":\"many\",\"completion_tokens\":1}}\n\ndata: [DONE]\n\n", t);
        QVERIFY(!garbage.finish(t, "", 1).ok);
    }

    void run_against_a_streaming_server() {
        MockServer server;
        server.overlap(2);
        const std::uint32_t requests = 48, concurrency = 4;
        const BenchClientReport r = run_bench_client(options_for(server, requests, concurrency));

        QCOMPARE(r.model, std::string("mock-model"));
        QCOMPARE(r.workload.vocab, MockServer::kVocab);
        QCOMPARE(r.workload.max_total, MockServer::kMaxModelLen);
        const std::vector<WorkloadRequest> workload = make_workload(r.workload);
        std::uint32_t ok = 0;
        std::uint64_t prompt_tokens = 0, output_tokens = 0;
        std::map<std::vector<TokenId>, std::uint32_t> max_tokens; // prompt -> what the workload asks
        std::map<Fate, int> fates;
        for (const WorkloadRequest& w : workload) {
            max_tokens[w.prompt] = w.output_len;
            ++fates[fate_of(w.prompt)];
            if (fate_of(w.prompt) == Fate::Ok) {
                ++ok;
                prompt_tokens += w.prompt.size();
                output_tokens += w.output_len;
            }
        }
        QCOMPARE(fates.size(), std::size_t(5)); // the seed draws every way to fail, and successes
        QCOMPARE(r.completed, ok);
        QCOMPARE(r.failed, requests - ok);
        QCOMPARE(r.prompt_tokens, prompt_tokens);
        QCOMPARE(r.output_tokens, output_tokens); // from usage: the mock sends two tokens a chunk
        QVERIFY(!r.first_error.empty());

        const std::vector<nlohmann::json> bodies = server.bodies();
        QCOMPARE(bodies.size(), std::size_t(requests));
        for (const nlohmann::json& b : bodies) {
            const auto prompt = b["prompt"].get<std::vector<TokenId>>();
            QVERIFY(max_tokens.contains(prompt));
            QCOMPARE(b["max_tokens"].get<std::uint32_t>(), max_tokens[prompt]);
            QVERIFY(prompt.size() + max_tokens[prompt] <= MockServer::kMaxModelLen);
            for (TokenId id : prompt)
                QVERIFY(id >= 0 && std::uint32_t(id) < MockServer::kVocab);
            QCOMPARE(b["model"], "mock-model");
            QCOMPARE(b["ignore_eos"], true);
            QCOMPARE(b["stream"], true);
            QCOMPARE(b["stream_options"]["include_usage"], true);
            QCOMPARE(b["temperature"], 0);
        }
        // At most one stream per worker; and more than one at once, since
        // the server holds the first until a second has begun.
        QVERIFY2(server.most_streams() <= int(concurrency), std::to_string(server.most_streams()).c_str());
        QVERIFY(server.most_streams() >= 2);

        for (const Percentiles& p : {r.ttft_ms, r.itl_ms, r.e2e_ms})
            QVERIFY(p.p50_ms <= p.p90_ms && p.p90_ms <= p.p99_ms);
        QVERIFY(r.ttft_ms.p99_ms <= r.e2e_ms.p99_ms);

        const nlohmann::ordered_json j = to_json(r);
        for (const char* key : {"completed", "failed", "duration_s", "requests_per_second", "output_tokens_per_second",
                                "total_tokens_per_second", "ttft_ms", "itl_ms", "e2e_ms"})
            QVERIFY2(j.contains(key), key);
        QCOMPARE(j["ttft_ms"].size(), std::size_t(3));
        QVERIFY(j["itl_ms"].contains("p50") && j["itl_ms"].contains("p99"));
        QVERIFY(j["e2e_ms"].contains("p50") && j["e2e_ms"].contains("p99"));
    }

    void the_same_seed_sends_the_same_prompts() {
        MockServer a, b;
        run_bench_client(options_for(a, 8, 2));
        run_bench_client(options_for(b, 8, 3));
        auto prompts = [](const std::vector<nlohmann::json>& bodies) {
            std::vector<std::vector<TokenId>> p;
            for (const nlohmann::json& body : bodies)
                p.push_back(body["prompt"].get<std::vector<TokenId>>());
            std::sort(p.begin(), p.end()); // arrival order depends on the threads
            return p;
        };
        QCOMPARE(prompts(a.bodies()), prompts(b.bodies()));
    }

    void chat_counts_words_and_content_chunks() {
        MockServer server;
        BenchClientOptions o = options_for(server, 6, 2);
        o.api = BenchApi::Chat;
        const BenchClientReport r = run_bench_client(o);
        QCOMPARE(r.completed, 6u);
        std::uint64_t output_tokens = 0;
        for (const WorkloadRequest& w : make_workload(r.workload))
            output_tokens += w.output_len;
        QCOMPARE(r.output_tokens, output_tokens); // no usage chunk: one token per content chunk
        for (const nlohmann::json& b : server.bodies()) {
            const std::string text = b["messages"][0]["content"].get<std::string>();
            QVERIFY(!b.contains("prompt"));
            QCOMPARE(b["messages"][0]["role"], "user");
            QVERIFY(!text.empty() && text.back() != ' ');
        }
    }

    void unreachable_server_is_an_error() {
        BenchClientOptions o;
        o.url = "http://127.0.0.1:1"; // nothing listens on port 1
        try {
            run_bench_client(o);
            QFAIL("expected an error");
        } catch (const Error& e) {
            QVERIFY2(std::string(e.what()).find("cannot reach") != std::string::npos, e.what());
        }
        o.url = "127.0.0.1:8000";
        QVERIFY_THROWS_EXCEPTION(Error, run_bench_client(o));
    }
};

QTEST_GUILESS_MAIN(TestBenchClient)
#include "test_bench_client.moc"
