// kvscope-cli top against llama.cpp's real llama-server, when one is
// built: KVSCOPE_LLAMA_SERVER names the binary
// (../shared/peers/llamacpp/build-server.sh builds one into /tmp). Without
// it every test here skips, and ctest reports the test skipped.
//
// The acceptance check: under `bench client` load and at idle, the slots
// the monitor shows and its KV tokens match GET /slots.
#include <QtTest>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "net/attach/remote_monitor.h"
#include "cli_runner.h"
#include "support/test_models.h"
#include "support/wait.h"
#include "top_processes.h"

using kvscope::attach::RemoteSample;
using kvscope::attach::SlotSample;
using kvscope::test::json_of;
using kvscope::test::run_cli;
using nlohmann::json;
using namespace std::chrono_literals;

namespace {

// A port nothing listens on now (the kernel's pick for a socket closed at once).
int free_port() {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof address;
    bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address);
    getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
    close(fd);
    return ntohs(address.sin_port);
}

std::optional<std::uint32_t> number(const json& j, const char* key) {
    return j.contains(key) && j[key].is_number_unsigned() ? std::optional(j[key].get<std::uint32_t>()) : std::nullopt;
}

// A slot as GET /slots describes it. The tokens its KV holds: this
// llama.cpp counts them in n_prompt_tokens (the slot's cached tokens, grown
// by each sampled one); during a prefill cache + processed + decoded may be
// ahead by the token sampled but not yet decoded.
SlotSample slot_of(const json& s) {
    SlotSample slot;
    slot.id = s["id"].get<int>();
    slot.n_ctx = s["n_ctx"].get<std::uint32_t>();
    slot.busy = s["is_processing"].get<bool>();
    slot.prompt_tokens = number(s, "n_prompt_tokens");
    if (s.contains("next_token")) {
        const json& next = s["next_token"].is_array() ? s["next_token"][0] : s["next_token"];
        slot.decoded = number(next, "n_decoded");
    }
    const std::uint32_t in_kv = number(s, "n_prompt_tokens_cache").value_or(0) +
                                number(s, "n_prompt_tokens_processed").value_or(0) + slot.decoded.value_or(0);
    slot.tokens = std::max(slot.prompt_tokens.value_or(0), in_kv);
    return slot;
}

struct SlotsRead {
    std::vector<SlotSample> list; // ("slots" is a Qt keyword, which moc reads)
    std::vector<std::int64_t> tasks; // id_task per slot, -1 before its first
};

SlotsRead read_slots(httplib::Client& client) {
    SlotsRead read;
    const auto r = client.Get("/slots");
    if (!r || r->status != 200)
        return read;
    for (const json& s : json::parse(r->body)) {
        read.list.push_back(slot_of(s));
        read.tasks.push_back(s.value("id_task", std::int64_t{-1}));
    }
    return read;
}

std::uint64_t tokens_of(const std::vector<SlotSample>& list) {
    std::uint64_t sum = 0;
    for (const SlotSample& s : list)
        sum += s.tokens;
    return sum;
}

template <typename T>
bool between(const std::optional<T>& low, const std::optional<T>& x, const std::optional<T>& high) {
    return low && x && high && *low <= *x && *x <= *high;
}

} // namespace

class TestCliTopLlamaCpp : public QObject {
    Q_OBJECT
private slots:
    void initTestCase();
    void cleanupTestCase();
    void once_json_gives_slots_and_kv_tokens();
    void slots_match_get_slots_under_load_and_at_idle();

private:
    QProcess server_;
    QString url_;
};

void TestCliTopLlamaCpp::initTestCase() {
    const QString binary = qEnvironmentVariable("KVSCOPE_LLAMA_SERVER");
    if (binary.isEmpty())
        QSKIP("KVSCOPE_LLAMA_SERVER is not set: point it at a llama-server binary "
              "(../shared/peers/llamacpp/build-server.sh builds one) to check top against llama.cpp");
    KVSCOPE_REQUIRE_MODEL(model, "stories260K-f32.gguf");
    const int port = free_port();
    url_ = QStringLiteral("http://127.0.0.1:%1").arg(port);
    server_.setStandardOutputFile(QProcess::nullDevice());
    server_.setStandardErrorFile(QProcess::nullDevice());
    server_.start(binary, {"-m", model, "--host", "127.0.0.1", "--port", QString::number(port), "-np", "2", "-c",
                           "1024", "--metrics", "-t", "1"});
    QVERIFY2(server_.waitForStarted(), qPrintable(binary));
    // It listens before the model is loaded: ready when /health says 200.
    httplib::Client client(url_.toStdString());
    QVERIFY2(kvscope::test::wait_until([&] {
                 const auto r = client.Get("/health");
                 return r && r->status == 200;
             }),
             "llama-server did not come up");
}

void TestCliTopLlamaCpp::cleanupTestCase() {
    server_.terminate();
    if (!server_.waitForFinished(10000))
        server_.kill();
}

void TestCliTopLlamaCpp::once_json_gives_slots_and_kv_tokens() {
    const auto r = run_cli({"top", "--url", url_, "--once", "--json"});
    QVERIFY2(r.exit_code == 0, r.err.constData());
    const json j = json_of(r.out);
    QCOMPARE(j["kind"], "llama.cpp");
    QCOMPARE(j["link"], "live");
    QCOMPARE(j["faults"], json::array()); // /metrics is on
    QCOMPARE(j["slots"].size(), 2u);
    for (const json& slot : j["slots"]) {
        QVERIFY(slot["n_ctx"].get<int>() > 0);
        QCOMPARE(slot["reserved_free"], slot["n_ctx"].get<int>() - slot["tokens"].get<int>());
    }
    QCOMPARE(j["total"]["kv_dtype"], "f16");
    QVERIFY(j["total"]["kv_tokens_used"].is_number());
    // -np 2 -c 1024: two split slots of 512 tokens each (stories260K's
    // training context is 512 too, so only the slot count tells split from unified).
    QCOMPARE(j["total"]["kv_tokens_capacity"], 1024);
    // Told the slots share one buffer, the capacity is one slot's context.
    const auto shared = run_cli({"top", "--url", url_, "--once", "--json", "--kv-unified", "yes"});
    QVERIFY2(shared.exit_code == 0, shared.err.constData());
    QCOMPARE(json_of(shared.out)["total"]["kv_tokens_capacity"], 512);
    QVERIFY(j["total"]["kv_blocks_total"].is_null()); // no blocks: one contiguous context per slot
    QVERIFY(j["cannot_tell"].size() >= 2);
    QCOMPARE(j["engine_step"], nullptr);
}

// Under load the slots move between any two reads, so each monitor sample
// is taken between two GET /slots: a slot running the same task in both
// was running it in between too, with tokens and decoded counts between
// the two reads'. At idle they must be equal.
void TestCliTopLlamaCpp::slots_match_get_slots_under_load_and_at_idle() {
    kvscope::attach::ConnectOptions o;
    o.url = url_.toStdString();
    o.interval = 100ms;
    const kvscope::attach::RemoteMonitor monitor(o);
    httplib::Client client(o.url);
    QProcess load;
    load.start(QStringLiteral(KVSCOPE_CLI),
               {"--log-level", "warn", "bench", "client", "--url", url_, "--requests", "8", "--concurrency", "2",
                "--lengths", "fixed", "--prompt-len", "64", "--output-len", "300"});
    std::uint64_t seen = 0;
    int running_seen = 0;
    for (int tries = 0; tries < 10 && !load.waitForFinished(0); ++tries) {
        const SlotsRead before = read_slots(client);
        monitor.wait_next(seen, 2000ms);
        const auto sample = monitor.wait_next(seen, 2000ms); // a poll begun after `before`
        const SlotsRead after = read_slots(client);
        QCOMPARE(sample->slot_samples.size(), before.list.size());
        QCOMPARE(after.list.size(), before.list.size());
        for (std::size_t i = 0; i < before.list.size(); ++i) {
            const SlotSample& a = before.list[i];
            const SlotSample& b = sample->slot_samples[i];
            const SlotSample& c = after.list[i];
            QCOMPARE(b.id, a.id);
            QCOMPARE(b.n_ctx, a.n_ctx);
            if (!(a.busy && c.busy && before.tasks[i] == after.tasks[i]))
                continue;
            ++running_seen;
            QVERIFY(b.busy);
            QVERIFY2(a.tokens <= b.tokens && b.tokens <= c.tokens,
                     qPrintable(QString("%1 <= %2 <= %3").arg(a.tokens).arg(b.tokens).arg(c.tokens)));
            QVERIFY(between(a.decoded, b.decoded, c.decoded));
        }
    }
    QVERIFY(load.state() == QProcess::NotRunning || load.waitForFinished(60000));
    QVERIFY2(load.exitCode() == 0, load.readAllStandardError().constData());
    QVERIFY(running_seen > 0);
    qInfo("%d busy slots checked between two GET /slots under load", running_seen);

    // Idle: equal, after at most a poll or two.
    bool equal = false;
    std::shared_ptr<const RemoteSample> sample;
    SlotsRead now;
    for (int tries = 0; tries < 50 && !equal; ++tries) {
        sample = monitor.wait_next(seen, 2000ms);
        now = read_slots(client);
        equal = sample->slot_samples == now.list;
    }
    QVERIFY(equal);
    QCOMPARE(sample->total.kv_tokens_used, std::optional<std::uint64_t>(tokens_of(now.list)));
    QVERIFY(tokens_of(now.list) > 0); // idle slots keep their last prompt
    QCOMPARE(sample->total.running, std::optional<double>(0));
}

QTEST_GUILESS_MAIN(TestCliTopLlamaCpp)
#include "test_cli_top_llamacpp.moc"
