// The server's HTTP layer against hostile clients, over raw loopback
// sockets (no HTTP library to smooth anything over): each case of issue
// 33's list gets its status at once, in OpenAI's error shape, and the
// connection ends where RFC 9112 says it must. Bodies are bounded while
// they are read (a gzip bomb, 64 MiB chunked: the server's peak resident
// memory, this process's VmHWM, stays under 1.5x its idle level); the
// access log cannot be forged; a slow head is cut off by a timer; 2,000
// idle connections cost /health nothing it has to wait for; draining
// closes idle connections. stories260K served in-process, as
// `kvscope-cli serve` wires it (HttpServer over an EngineService).
#include <QtTest>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>
#include <spdlog/sinks/base_sink.h>

#include "engine/core/log.h"
#include "engine/runtime/model.h"
#include "engine/service/engine_service.h"
#include "engine/tokenizer/chat_template.h"
#include "net/serve/access_log.h"
#include "net/serve/http_server.h"
#include "net/serve/metrics_registry.h"
#include "support/process_memory.h"
#include "support/socket_send.h"
#include "support/test_models.h"
#include "tests/net/serve/gzip_bomb.h"
#include "tests/net/serve/hostile_json_cases.h"
#include "support/wait.h"

using namespace kvscope;
using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

// The "http" logger's lines, kept for the test to read.
class LineSink : public spdlog::sinks::base_sink<std::mutex> {
public:
    std::string text() {
        std::lock_guard lock(mutex_);
        return text_;
    }

protected:
    void sink_it_(const spdlog::details::log_msg& msg) override { text_.append(msg.payload.data(), msg.payload.size()) += '\n'; }
    void flush_() override {}

private:
    std::string text_;
};

// A raw client connection; closed with the object.
class RawClient {
public:
    explicit RawClient(int port) : fd_(socket(AF_INET, SOCK_STREAM, 0)) {
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_port = htons(static_cast<std::uint16_t>(port));
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        connected_ = fd_ >= 0 && ::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
    }
    ~RawClient() {
        if (fd_ >= 0)
            ::close(fd_);
    }
    RawClient(const RawClient&) = delete;
    RawClient& operator=(const RawClient&) = delete;

    bool connected() const { return connected_; }
    // False once the server stopped taking bytes (closed or reset).
    bool send(std::string_view bytes) {
        while (!bytes.empty()) {
            const ssize_t n = test::send_no_sigpipe(fd_, bytes.data(), bytes.size());
            if (n <= 0)
                return false;
            bytes.remove_prefix(static_cast<std::size_t>(n));
        }
        return true;
    }
    // Bytes are waiting to be read (or the server closed) within `ms`.
    bool readable(int ms) const {
        pollfd p{fd_, POLLIN, 0};
        return ::poll(&p, 1, ms) > 0;
    }
    // One whole response (Content-Length framed; its head alone when
    // `head_only`, as to HEAD), or what came before the server closed; ""
    // if nothing came within `ms`.
    std::string response(int ms = 10'000, bool head_only = false) {
        const auto until = Clock::now() + std::chrono::milliseconds(ms);
        for (;;) {
            if (head_only && in_.find("\r\n\r\n") != std::string::npos)
                return std::exchange(in_, {});
            if (complete())
                return take();
            const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now()).count();
            if (left <= 0 || !readable(static_cast<int>(left)))
                return take();
            char buf[65536];
            const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
            if (n <= 0) {
                closed_ = true;
                return take();
            }
            in_.append(buf, static_cast<std::size_t>(n));
        }
    }
    // What came until `marker` had come (or the server closed, or `ms` passed).
    std::string read_until(std::string_view marker, int ms = 10'000) {
        const auto until = Clock::now() + std::chrono::milliseconds(ms);
        while (in_.find(marker) == std::string::npos) {
            const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now()).count();
            if (left <= 0 || !readable(static_cast<int>(left)))
                break;
            char buf[65536];
            const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
            if (n <= 0) {
                closed_ = true;
                break;
            }
            in_.append(buf, static_cast<std::size_t>(n));
        }
        return take();
    }
    // The server closed the connection within `ms`.
    bool closed_by_server(int ms = 10'000) {
        const auto until = Clock::now() + std::chrono::milliseconds(ms);
        while (!closed_) {
            const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now()).count();
            if (left <= 0 || !readable(static_cast<int>(left)))
                return false;
            char buf[65536];
            const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
            if (n <= 0)
                closed_ = true;
        }
        return true;
    }
    void set_receive_buffer(int bytes) { setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &bytes, sizeof bytes); }

private:
    bool complete() const {
        const std::size_t end = in_.find("\r\n\r\n");
        if (end == std::string::npos)
            return false;
        const std::size_t cl = in_.find("Content-Length: ");
        if (cl == std::string::npos || cl > end)
            return false;
        return in_.size() >= end + 4 + std::stoul(in_.substr(cl + 16));
    }
    std::string take() {
        const std::size_t end = in_.find("\r\n\r\n");
        std::size_t length = in_.size();
        if (const std::size_t cl = in_.find("Content-Length: "); end != std::string::npos && cl < end)
            length = std::min(length, end + 4 + std::stoul(in_.substr(cl + 16)));
        std::string r = in_.substr(0, length);
        in_.erase(0, length);
        return r;
    }

    int fd_;
    bool connected_ = false;
    bool closed_ = false;
    std::string in_;
};

int status_of(const std::string& response) {
    return response.starts_with("HTTP/1.1 ") ? std::atoi(response.c_str() + 9) : 0;
}

json body_of(const std::string& response) {
    const std::size_t end = response.find("\r\n\r\n");
    return end == std::string::npos ? json() : json::parse(response.substr(end + 4), nullptr, false);
}

// An OpenAI error of this status and type "invalid_request_error".
bool invalid_request(const std::string& response, int status) {
    const json b = body_of(response);
    const bool ok = status_of(response) == status && b.contains("error") &&
                    b["error"]["type"] == "invalid_request_error" && b["error"]["code"] == status;
    if (!ok)
        qWarning("expected %d invalid_request_error, got: %s", status, response.substr(0, 400).c_str());
    return ok;
}

std::string post(const std::string& headers, const std::string& body) {
    return "POST /tokenize HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" + headers + "\r\n" + body;
}

std::size_t kib(std::size_t bytes) { return bytes >> 10; }

} // namespace

class TestHostileHttp : public QObject {
    Q_OBJECT

private slots:
    void initTestCase();
    void cleanupTestCase();
    void framing_is_strict();
    void chunked_body_with_a_trailer_is_read();
    void lengths_are_judged_from_the_head();
    void url_and_header_limits();
    void gzip_bomb_is_cut_off_at_the_limit();
    void chunked_flood_is_cut_off_early();
    void the_log_cannot_be_forged();
    void a_slow_head_is_timed_out();
    void idle_connections_cost_no_thread();
    void model_by_id();
    void json_field_matrix();
    void head_and_http10();
    void connections_per_client_are_capped();
    void slow_reader_is_dropped_and_its_request_aborted();
    void kv_stream_events_may_be_larger_than_the_bound();
    void drain_closes_idle_connections();

private:
    std::string exchange(const std::string& request) {
        RawClient c(port_);
        if (!c.connected() || !c.send(request))
            return {};
        return c.response();
    }

    std::shared_ptr<LineSink> sink_ = std::make_shared<LineSink>();
    std::shared_ptr<const Model> model_;
    std::unique_ptr<serve::MetricsRegistry> metrics_;
    std::unique_ptr<EngineService> service_;
    std::unique_ptr<ChatTemplate> chat_;
    std::unique_ptr<serve::HttpServer> server_;
    int port_ = 0;
    std::size_t idle_ = 0; // bytes resident once the server is up
};

void TestHostileHttp::initTestCase() {
    KVSCOPE_REQUIRE_MODEL(path, "stories260K-f32.gguf");
    // 2,000 idle connections: both ends are in this process.
    rlimit files{};
    getrlimit(RLIMIT_NOFILE, &files);
    files.rlim_cur = std::min<rlim_t>(files.rlim_max, 16384);
    setrlimit(RLIMIT_NOFILE, &files);
    logger("http")->sinks().push_back(sink_);
    model_ = std::make_shared<const Model>(path.toStdString());
    EngineConfig engine;
    engine.backend = Backend::Cpu;
    engine.num_blocks = 512; // room for the unread stream's 16 samples
    metrics_ = std::make_unique<serve::MetricsRegistry>(serve::MetricsOptions{.model_name = "stories", .engine = engine});
    service_ = std::make_unique<EngineService>(engine, model_, ServiceOptions{}, metrics_.get());
    // stories260K has no chat template; a ChatML one lets the chat route
    // read every field of its request.
    chat_ = std::make_unique<ChatTemplate>(
        "{% for m in messages %}{{'<|im_start|>' + m['role'] + '\\n' + m['content'] + '<|im_end|>\\n'}}{% endfor %}"
        "{% if add_generation_prompt %}{{'<|im_start|>assistant\\n'}}{% endif %}",
        "<s>", "</s>");
    serve::HttpServerOptions o;
    o.port = 0;
    o.http_threads = 8;
    o.connection.request_timeout = std::chrono::milliseconds(500);
    o.connection.max_unsent_bytes = 4096;
    // A body limit of 2 MiB (8 by default): stories260K idles at ~15 MB,
    // where 1.5x leaves room for a 7 MiB body and what reading needs
    // besides; a real model's idle level is far above the default limit.
    o.limits.max_body_bytes = 2u << 20;
    server_ = std::make_unique<serve::HttpServer>(o);
    port_ = server_->start();
    const std::uint32_t context = model_->config().context_length;
    server_->serve({service_.get(), {"stories", context, context, &service_->tokenizer(), chat_.get()}, metrics_.get()});
    QCOMPARE(status_of(exchange("GET /health HTTP/1.1\r\nHost: x\r\n\r\n")), 200);
    // Where the current size is unknown (no /proc), the peak so far: at
    // least the idle level, so the 1.5x bars below only get stricter.
    idle_ = test::resident_bytes().value_or(test::peak_resident_bytes_since_start());
    qInfo("idle resident memory: %zu KiB", kib(idle_));
}

void TestHostileHttp::cleanupTestCase() {
    if (server_)
        server_->stop();
    server_.reset();
    service_.reset();
}

// RFC 9112: a message whose length cannot be told for sure is an error,
// and the connection closes (a proxy in front could read it otherwise).
void TestHostileHttp::framing_is_strict() {
    const std::string body = R"({"prompt": "Once"})";
    const std::string two_lengths = post("Content-Length: 18\r\nContent-Length: 19\r\n", body + " ");
    const std::string te_and_cl = post("Transfer-Encoding: chunked\r\nContent-Length: 18\r\n", "12\r\n" + body + "\r\n0\r\n\r\n");
    const std::string cl_and_te = post("Content-Length: 18\r\nTransfer-Encoding: chunked\r\n", "12\r\n" + body + "\r\n0\r\n\r\n");
    const std::string bad_chunk = post("Transfer-Encoding: chunked\r\n", "12\r\n" + body + "XX0\r\n\r\n");
    const std::string not_chunked = post("Transfer-Encoding: gzip\r\n", body);
    for (const std::string& request : {two_lengths, te_and_cl, cl_and_te, bad_chunk, not_chunked}) {
        RawClient c(port_);
        QVERIFY(c.send(request));
        QVERIFY(invalid_request(c.response(), 400));
        QVERIFY(c.closed_by_server());
    }
    // The same length twice is one length.
    QCOMPARE(status_of(exchange(post("Content-Length: 18\r\nContent-Length: 18\r\n", body))), 200);
}

void TestHostileHttp::chunked_body_with_a_trailer_is_read() {
    const std::string r = exchange(post("Transfer-Encoding: chunked\r\n",
                                        "8\r\n{\"prompt\r\na\r\n\": \"Once\"}\r\n0\r\nX-Checksum: 1\r\n\r\n"));
    QCOMPARE(status_of(r), 200);
    QVERIFY2(body_of(r)["count"].get<int>() > 0, r.c_str());
}

// Both answer from the head alone: no body is sent, and the answer comes.
void TestHostileHttp::lengths_are_judged_from_the_head() {
    RawClient negative(port_);
    QVERIFY(negative.send(post("Content-Length: -5\r\n", "")));
    QVERIFY(invalid_request(negative.response(), 400));
    RawClient huge(port_);
    QVERIFY(huge.send(post("Content-Length: 100000000000\r\n", "")));
    QVERIFY(invalid_request(huge.response(), 413));
    QVERIFY(huge.closed_by_server());
}

void TestHostileHttp::url_and_header_limits() {
    QVERIFY(invalid_request(exchange("GET /" + std::string(64 * 1024, 'a') + " HTTP/1.1\r\nHost: x\r\n\r\n"), 414));
    QVERIFY(invalid_request(exchange("GET /health HTTP/1.1\r\nHost: x\r\nX-Big: " + std::string(64 * 1024, 'b') +
                                     "\r\n\r\n"),
                            431));
    std::string many = "GET /health HTTP/1.1\r\nHost: x\r\n";
    for (int i = 0; i < 200; ++i)
        many += "X-" + std::to_string(i) + ": 1\r\n";
    QVERIFY(invalid_request(exchange(many + "\r\n"), 431));
}

// 256 KB of gzip inflating to 256 MiB: inflated a step at a time and cut
// off at the body limit.
void TestHostileHttp::gzip_bomb_is_cut_off_at_the_limit() {
    const std::string bomb = test::gzip_of_zeros(std::size_t(256) << 20);
    qInfo("gzip bomb: %zu bytes, 256 MiB inflated", bomb.size());
    std::string r;
    const test::PeakResident peak = test::peak_resident_during([&] {
        r = exchange(post("Content-Encoding: gzip\r\nContent-Length: " + std::to_string(bomb.size()) + "\r\n", bomb));
    });
    qInfo("peak resident memory during the gzip bomb: %zu KiB (idle %zu KiB, %.2fx)", kib(peak.at_most), kib(idle_),
          double(peak.at_most) / double(idle_));
    QVERIFY(invalid_request(r, 413));
    if (!peak.exact && peak.at_most >= idle_ * 3 / 2)
        QSKIP("the peak during the bomb cannot be told from an earlier one here (no reset of the peak: Linux only)");
    QVERIFY(peak.at_most < idle_ * 3 / 2);
    // A small gzip body is read as its JSON.
    const std::string small = [] {
        std::string text = R"({"prompt": "Once upon a time"})";
        uLongf n = compressBound(static_cast<uLong>(text.size()));
        std::string out(n, '\0');
        compress(reinterpret_cast<Bytef*>(out.data()), &n, reinterpret_cast<const Bytef*>(text.data()), text.size());
        out.resize(n);
        return out;
    }();
    QCOMPARE(status_of(exchange(post("Content-Encoding: deflate\r\nContent-Length: " + std::to_string(small.size()) + "\r\n", small))), 200);
}

// 64 MiB in 64 KiB chunks: the 413 comes after about the limit, while the
// client is still sending.
void TestHostileHttp::chunked_flood_is_cut_off_early() {
    RawClient c(port_);
    if (const auto now = test::resident_bytes())
        qInfo("resident memory before the flood: %zu KiB", kib(*now));
    QVERIFY(c.send(post("Transfer-Encoding: chunked\r\n", "")));
    std::size_t sent = 0;
    std::string r;
    const test::PeakResident peak = test::peak_resident_during([&] {
        std::string chunk = "10000\r\n"; // appended to, not "..." + std::string: GCC 12 warns there (-Warray-bounds)
        chunk.append(65536, 'x').append("\r\n");
        while (sent < (std::size_t(64) << 20) && !c.readable(0) && c.send(chunk))
            sent += 65536;
        r = c.response();
    });
    qInfo("chunked flood: 413 after %zu MiB sent; peak resident memory %zu KiB (idle %zu KiB)", sent >> 20,
          kib(peak.at_most), kib(idle_));
    QVERIFY(invalid_request(r, 413));
    QVERIFY(sent < (std::size_t(64) << 20));
    if (!peak.exact && peak.at_most >= idle_ * 3 / 2)
        QSKIP("the peak during the flood cannot be told from an earlier one here (no reset of the peak: Linux only)");
    QVERIFY(peak.at_most < idle_ * 3 / 2);
}

void TestHostileHttp::the_log_cannot_be_forged() {
    QCOMPARE(status_of(exchange("GET /x%0d%0a%5B2026%5D%20FAKE%00%ff HTTP/1.1\r\nHost: x\r\n\r\n")), 404);
    std::string text;
    QVERIFY(test::wait_until([&] {
        text = sink_->text();
        return text.find("GET /x\\x0d\\x0a[2026] FAKE\\x00\\xff 404") != std::string::npos;
    }));
    QVERIFY(text.find("\nFAKE") == std::string::npos && text.find('\0') == std::string::npos);
    serve::AccessLog json_log(serve::LogFormat::Text);
    const std::string line = json_log.format({"127.0.0.1", "GET", "/a\r\nb\xc3\xa9", 200, 5, {}, 1.25, 2.0});
    QCOMPARE(line, std::string("127.0.0.1 GET /a\\x0d\\x0ab\xc3\xa9 200 tokens in 5 out - ttft_ms 1.2 total_ms 2.0"));
    QCOMPARE(serve::escape_for_log("\xc2\x85\xed\xa0\x80\\"), std::string("\\xc2\\x85\\xed\\xa0\\x80\\x5c"));
}

// A head sent a line every 100 ms is cut off by the request timeout
// (500 ms here) long before the client is through.
void TestHostileHttp::a_slow_head_is_timed_out() {
    RawClient c(port_);
    QVERIFY(c.send("GET /health HTTP/1.1\r\n"));
    int lines = 0;
    for (; lines < 100 && !c.readable(100); ++lines)
        if (!c.send("X-Slow-" + std::to_string(lines) + ": 1\r\n"))
            break;
    QVERIFY(c.closed_by_server());
    qInfo("slow head: closed after %d header lines", lines);
    QVERIFY(lines < 100);
}

void TestHostileHttp::idle_connections_cost_no_thread() {
    constexpr int kIdle = 2000;
    std::vector<std::unique_ptr<RawClient>> idle;
    for (int i = 0; i < kIdle; ++i) {
        idle.push_back(std::make_unique<RawClient>(port_));
        QVERIFY(idle.back()->connected());
    }
    // Half of them have had a request: keep-alive connections, not just opened ones.
    for (int i = 0; i < kIdle; i += 2) {
        QVERIFY(idle[i]->send("GET /health HTTP/1.1\r\nHost: x\r\n\r\n"));
        QCOMPARE(status_of(idle[i]->response()), 200);
    }
    double worst_ms = 0;
    for (int i = 0; i < 20; ++i) {
        const auto t0 = Clock::now();
        QCOMPARE(status_of(exchange("GET /health HTTP/1.1\r\nHost: x\r\n\r\n")), 200);
        worst_ms = std::max(worst_ms, std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
    }
    qInfo("%d idle connections open: /health's slowest of 20 answers took %.1f ms", kIdle, worst_ms);
}

void TestHostileHttp::model_by_id() {
    const std::string found = exchange("GET /v1/models/stories HTTP/1.1\r\nHost: x\r\n\r\n");
    QCOMPARE(status_of(found), 200);
    QCOMPARE(body_of(found)["id"], "stories");
    QCOMPARE(body_of(found)["object"], "model");
    const std::string missing = exchange("GET /v1/models/gpt-4 HTTP/1.1\r\nHost: x\r\n\r\n");
    QCOMPARE(status_of(missing), 404);
    QCOMPARE(body_of(missing)["error"]["code"], 404);
}

// Issue 33 item 9's matrix (hostile_json_cases.h): every field the OpenAI
// routes read, given wrong types, values out of range, absurd sizes and
// depths, strings that are not text, duplicate and unknown keys, through the
// whole server: a 400 naming the field (or a 200 where the value is
// legitimately accepted), never a 5xx, a crash or a hang.
void TestHostileHttp::json_field_matrix() {
    int failed = 0;
    const auto cases = test::hostile_json_cases();
    for (const test::HostileJsonCase& c : cases) {
        const std::string r = exchange("POST " + c.route + " HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" +
                                       "Content-Length: " + std::to_string(c.body.size()) + "\r\n\r\n" + c.body);
        const json b = body_of(r);
        const json param = c.param.empty() ? json() : json(c.param);
        const bool ok = status_of(r) == c.status &&
                        (c.status == 200 || (invalid_request(r, 400) && b["error"]["param"] == param));
        if (!ok) {
            ++failed;
            qWarning("%s: expected %d (param '%s'), got: %s", c.name.c_str(), c.status, c.param.c_str(),
                     r.substr(0, 300).c_str());
        }
    }
    qInfo("JSON field matrix: %zu cases, %d answered otherwise", cases.size(), failed);
    QCOMPARE(failed, 0);
}

// HEAD: GET's status and length, no body. HTTP/1.0 has no chunked
// coding: a stream is its bytes, ended by the close.
void TestHostileHttp::head_and_http10() {
    RawClient head(port_);
    QVERIFY(head.send("HEAD /health HTTP/1.1\r\nHost: x\r\n\r\n"));
    QCOMPARE(head.response(10'000, true), std::string("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
                                          "15\r\nConnection: keep-alive\r\n\r\n"));
    RawClient old(port_);
    const std::string body = R"({"prompt": "Once", "max_tokens": 2, "stream": true})";
    QVERIFY(old.send("POST /v1/completions HTTP/1.0\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" +
                     body));
    const std::string stream = old.response();
    QVERIFY(old.closed_by_server());
    QCOMPARE(status_of(stream), 200);
    QVERIFY(stream.find("Transfer-Encoding") == std::string::npos);
    QVERIFY2(stream.ends_with("data: [DONE]\n\n"), stream.c_str());
}

// A server of its own (no model: its routes say 503 "loading") capped at
// two connections a client: the third is answered 503 and closed, and one
// closing makes room again.
void TestHostileHttp::connections_per_client_are_capped() {
    serve::HttpServerOptions o;
    o.port = 0;
    o.http_threads = 2;
    o.connection.max_per_client = 2;
    serve::HttpServer capped(o);
    const int port = capped.start();
    auto first = std::make_unique<RawClient>(port);
    RawClient second(port);
    QVERIFY(first->send("GET /health HTTP/1.1\r\nHost: x\r\n\r\n"));
    QCOMPARE(status_of(first->response()), 503); // loading: the connection stays
    RawClient third(port);
    const std::string refused = third.response();
    QCOMPARE(status_of(refused), 503);
    QVERIFY2(refused.find("too many connections from 127.0.0.1") != std::string::npos, refused.c_str());
    QVERIFY(third.closed_by_server());
    first.reset();
    QVERIFY(test::wait_until([&] {
        RawClient again(port);
        return again.send("GET /health HTTP/1.1\r\nHost: x\r\n\r\n") &&
               again.response().find("loading") != std::string::npos;
    }));
}

// A client that asks for a long stream and reads none of it: past the
// connection's bound of unsent bytes (4 KiB here, after what the sockets
// hold) its request is aborted and every block comes back.
void TestHostileHttp::slow_reader_is_dropped_and_its_request_aborted() {
    const std::uint64_t aborted_before = service_->snapshot()->aborted_requests;
    RawClient c(port_);
    c.set_receive_buffer(4096);
    // 16 samples of 450 tokens, each piece with its 20 likeliest
    // alternatives (~1 KB): ~7 MB, past what the sockets can hold (the
    // kernel grows a send buffer up to 4 MiB: net.ipv4.tcp_wmem).
    const std::string body =
        R"({"prompt": [1], "max_tokens": 450, "ignore_eos": true, "stream": true, "n": 16, "logprobs": 20})";
    QVERIFY(c.send("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: " + std::to_string(body.size()) +
                   "\r\n\r\n" + body));
    std::shared_ptr<const EngineSnapshot> s;
    QVERIFY(test::wait_until([&] {
        s = service_->snapshot();
        return s->aborted_requests > aborted_before && s->running == 0 && s->waiting == 0;
    }));
    // What the server had sent still comes first: read it with a window
    // wide enough that it does not trickle in by zero-window probes.
    c.set_receive_buffer(8 << 20);
    QVERIFY(c.closed_by_server());
}

// The bound is how far behind a reader may fall, not the size of one piece:
// a snapshot of a large pool is several MiB (here the 512-block pool's is
// far over the test's 4,096 bytes) and still goes out whole.
void TestHostileHttp::kv_stream_events_may_be_larger_than_the_bound() {
    RawClient c(port_);
    QVERIFY(c.send("GET /kv/stream HTTP/1.1\r\nHost: x\r\n\r\n"));
    const std::string got = c.read_until("}\n\n");
    const std::size_t data = got.find("data: {");
    QVERIFY2(data != std::string::npos, got.substr(0, 300).c_str());
    const std::size_t end = got.find("}\n\n", data);
    QVERIFY(end != std::string::npos);
    QVERIFY2(end - data > 4096, std::to_string(end - data).c_str());
    const auto event = nlohmann::json::parse(got.substr(data + 6, end + 1 - data - 6));
    QCOMPARE(event["pool"]["blocks"].size(), 512u);
}

// Last: the server drains for good. /health says 503, /metrics stays readable.
void TestHostileHttp::drain_closes_idle_connections() {
    std::vector<std::unique_ptr<RawClient>> idle;
    for (int i = 0; i < 10; ++i) {
        idle.push_back(std::make_unique<RawClient>(port_));
        QVERIFY(idle.back()->send("GET /health HTTP/1.1\r\nHost: x\r\n\r\n"));
        QCOMPARE(status_of(idle.back()->response()), 200);
    }
    server_->begin_drain();
    for (auto& c : idle)
        QVERIFY(c->closed_by_server());
    const std::string health = exchange("GET /health HTTP/1.1\r\nHost: x\r\n\r\n");
    QCOMPARE(status_of(health), 503);
    QVERIFY(health.find("Connection: close") != std::string::npos);
    QCOMPARE(status_of(exchange("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")), 200); // a scraper sees the drain
}

QTEST_GUILESS_MAIN(TestHostileHttp)
#include "test_hostile_http.moc"
