// Issue 33 item 7: memory comes back. A `kvscope-cli serve` process
// (stories260K, a 4 MiB KV pool) takes three passes of the hostile JSON
// matrix (tests/net/serve/hostile_json_cases.h) plus a gzip bomb and a
// chunked flood each pass; once idle, its resident memory (VmRSS from
// tests/support/process_memory.h; skipped where there is none) must come back within 10% or 20 MB of its level
// before the burst, whichever is larger. The numbers are printed.
#include <QtTest>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <optional>
#include <string>


#include "support/process_memory.h"
#include "support/socket_send.h"
#include "support/test_models.h"
#include "support/wait.h"
#include "tests/net/serve/gzip_bomb.h"
#include "tests/net/serve/hostile_json_cases.h"

using namespace kvscope;
using Clock = std::chrono::steady_clock;

namespace {

// A process's resident memory in kB (-1: unknown, or no such process).
long resident_kb(qint64 pid) {
    const std::optional<std::size_t> bytes = test::resident_bytes_of(static_cast<pid_t>(pid));
    return bytes ? static_cast<long>(*bytes >> 10) : -1;
}

// One request on a connection of its own; the status answered (0: none
// within 30 s). Sending stops once the server answers (a 413 cuts a flood
// off), and whatever it sends is read until it closes.
int exchange(int port, const std::string& head, const std::string& body, std::size_t repeat = 1) {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<std::uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
        if (fd >= 0)
            ::close(fd);
        return 0;
    }
    const auto answered = [fd] {
        pollfd p{fd, POLLIN, 0};
        return ::poll(&p, 1, 0) > 0;
    };
    const auto send_all = [fd](std::string_view bytes) {
        while (!bytes.empty()) {
            const ssize_t n = test::send_no_sigpipe(fd, bytes.data(), bytes.size());
            if (n <= 0)
                return false;
            bytes.remove_prefix(static_cast<std::size_t>(n));
        }
        return true;
    };
    if (send_all(head))
        for (std::size_t i = 0; i < repeat && !answered() && send_all(body); ++i) {
        }
    std::string in;
    const auto until = Clock::now() + std::chrono::seconds(30);
    for (char buf[65536];;) {
        pollfd p{fd, POLLIN, 0};
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now()).count();
        if (left <= 0 || ::poll(&p, 1, static_cast<int>(left)) <= 0)
            break;
        const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
        if (n <= 0)
            break;
        in.append(buf, static_cast<std::size_t>(n));
    }
    ::close(fd);
    return in.starts_with("HTTP/1.1 ") ? std::atoi(in.c_str() + 9) : 0;
}

std::string post_head(const std::string& route, const std::string& framing) {
    return "POST " + route + " HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nConnection: close\r\n" +
           framing + "\r\n";
}

} // namespace

class TestCliServeMemory : public QObject {
    Q_OBJECT

private slots:
    void memory_comes_back_after_a_hostile_burst();
};

void TestCliServeMemory::memory_comes_back_after_a_hostile_burst() {
    KVSCOPE_REQUIRE_MODEL(model, "stories260K-f32.gguf");
    QTemporaryDir dir;
    QProcess server;
    server.setStandardErrorFile(dir.filePath("serve.log"));
    server.start(QStringLiteral(KVSCOPE_CLI),
                 {"serve", "--model", model, "--port", "0", "--threads", "1", "--kv-budget-mib", "4"});
    while (!server.canReadLine())
        QVERIFY2(server.waitForReadyRead(60'000), "serve gave no first line");
    const QRegularExpressionMatch m =
        QRegularExpression(R"(listening on http://[^:]+:(\d+) )").match(QString::fromUtf8(server.readLine()));
    QVERIFY(m.hasMatch());
    const int port = m.captured(1).toInt();
    const qint64 pid = server.processId();
    struct KillOnFailure {
        QProcess& p;
        ~KillOnFailure() {
            if (p.state() != QProcess::NotRunning) {
                p.kill();
                p.waitForFinished();
            }
        }
    } guard{server};

    // Warm: the first requests of each kind allocate what every later one reuses.
    const auto cases = test::hostile_json_cases();
    const auto send_case = [&](const test::HostileJsonCase& c) {
        return exchange(port, post_head(c.route, "Content-Length: " + std::to_string(c.body.size()) + "\r\n"), c.body);
    };
    QCOMPARE(send_case({"warm", "/v1/completions", R"({"prompt": "Once", "max_tokens": 2})", 200, ""}), 200);
    const long idle = resident_kb(pid);
    if (idle < 0)
        QSKIP("no resident size of another process on this system (Linux's VmRSS)");

    const std::string bomb = test::gzip_of_zeros(std::size_t(64) << 20);
    const std::string chunk = "10000\r\n" + std::string(65536, 'x') + "\r\n";
    long peak = idle;
    for (int pass = 0; pass < 3; ++pass) {
        for (const test::HostileJsonCase& c : cases) {
            const int status = send_case(c);
            QVERIFY2(status == 200 || status == 400, qPrintable(QString::fromStdString(c.name)));
            peak = std::max(peak, resident_kb(pid));
        }
        QCOMPARE(exchange(port, post_head("/v1/completions", "Content-Encoding: gzip\r\nContent-Length: " +
                                                                  std::to_string(bomb.size()) + "\r\n"),
                          bomb),
                 413);
        peak = std::max(peak, resident_kb(pid));
        QCOMPARE(exchange(port, post_head("/v1/completions", "Transfer-Encoding: chunked\r\n"), chunk, 1024), 413);
        peak = std::max(peak, resident_kb(pid));
    }
    const long after = resident_kb(pid);
    const long bar = std::max(idle + idle / 10, idle + 20 * 1024);
    long settled = after;
    const bool back = test::wait_until([&] { return (settled = resident_kb(pid)) <= bar; }, std::chrono::seconds(20));
    qInfo("serve resident memory: idle %ld kB, peak %ld kB, after the burst %ld kB, once idle %ld kB (bar %ld kB)",
          idle, peak, after, settled, bar);
    QVERIFY(back);
    server.terminate();
    QVERIFY(server.waitForFinished(30'000));
}

QTEST_GUILESS_MAIN(TestCliServeMemory)
#include "test_cli_serve_memory.moc"
