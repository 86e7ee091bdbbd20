#include "net/attach/remote_monitor.h"

#include <algorithm>
#include <atomic>
#include <charconv>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "net/attach/kv_events_subscriber.h"
#include "net/attach/server_readers.h"
#include "net/client/sse_reader.h"

namespace kvscope::attach {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

constexpr auto kFirstBackoff = 500ms;
constexpr auto kMaxBackoff = 8s;
constexpr std::size_t kMaxFaults = 16;
// A host that drops SYNs would hold a connect this long; the destructor
// cannot interrupt a connect, so it is kept short whatever options.timeout is.
constexpr auto kConnectTimeoutCap = 1s;
// kvscope's /kv/stream writes a comment every second when the engine is
// idle (net/serve/server_routes.cpp), but a busy server writes nothing while
// it words a large pool's snapshot: 112,640 blocks are 11 MB of JSON, over
// 1.5 s on a loaded 2-core machine. A dead server is the poller's to find.
constexpr auto kStreamReadTimeoutMin = 10s;
// How often the destructor repeats httplib's stop() while a thread winds
// down (a request may have started just after the previous stop()).
constexpr auto kStopRetry = 20ms;

std::string without_trailing_slash(std::string url) {
    if (url.ends_with('/'))
        url.pop_back();
    return url;
}

double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// The newest faults, oldest first. A fault equal to the newest one is not
// added again: a server that stays down for an hour is one line, not 450.
class FaultRing {
public:
    void add(std::string fault) {
        if (!faults_.empty() && faults_.back() == fault)
            return;
        faults_.push_back(std::move(fault));
        if (faults_.size() > kMaxFaults)
            faults_.pop_front();
    }
    void add(std::vector<std::string> faults) {
        for (std::string& fault : faults)
            add(std::move(fault));
    }
    std::vector<std::string> list() const { return {faults_.begin(), faults_.end()}; }

private:
    std::deque<std::string> faults_;
};

// One GET's outcome: the body of a 200, or why there is none.
struct Answer {
    int status = 0;     // 0: no HTTP answer at all
    std::string body;
    std::string failure; // empty when status is 200

    bool ok() const { return status == 200; }
    bool answered() const { return status != 0; }
};

std::string describe(httplib::Error error, std::chrono::milliseconds timeout) {
    switch (error) {
    case httplib::Error::Connection:
        return "connection refused (nothing listens there, or the host is unreachable)";
    case httplib::Error::ConnectionTimeout:
        return "connection timed out";
    case httplib::Error::Read:
        return "no complete answer within " + std::to_string(timeout.count()) + " ms (timed out, or the server "
               "closed the connection)";
    case httplib::Error::Write:
        return "the connection broke while sending the request";
    case httplib::Error::Canceled:
        return "canceled";
    case httplib::Error::SSLServerVerification:
        return "the server's TLS certificate is not trusted (KVSCOPE_CA_FILE or SSL_CERT_FILE names a CA file to "
               "trust)";
    case httplib::Error::SSLConnection:
        return "the TLS handshake failed (is it an https:// server?)";
    default:
        return "request failed (" + httplib::to_string(error) + ")";
    }
}

Answer answer_of(const httplib::Result& result, std::string_view path, std::chrono::milliseconds timeout) {
    if (!result)
        return {0, {}, "GET " + std::string(path) + ": " + describe(result.error(), timeout)};
    if (result->status == 200)
        return {200, result->body, {}};
    std::string failure = "HTTP " + std::to_string(result->status) + " on " + std::string(path);
    if (result->status == 401)
        failure += ": the server wants an API key (--api-key)";
    return {result->status, result->body, std::move(failure)};
}

// The `owned_by` of /v1/models' first model: "kvscope", "llamacpp", "vllm".
std::optional<ServerKind> kind_from_models(const std::string& body) {
    const nlohmann::json j = nlohmann::json::parse(body, nullptr, false);
    if (!j.is_object() || !j.contains("data") || !j["data"].is_array() || j["data"].empty() ||
        !j["data"][0].is_object())
        return std::nullopt;
    const nlohmann::json& owner = j["data"][0].value("owned_by", nlohmann::json());
    if (!owner.is_string())
        return std::nullopt;
    return parse_server_kind(owner.get<std::string>());
}

// llama.cpp's /props: an object with default_generation_settings or total_slots.
bool is_llamacpp_props(const std::string& body) {
    const nlohmann::json j = nlohmann::json::parse(body, nullptr, false);
    return j.is_object() && (j.contains("default_generation_settings") || j.contains("total_slots"));
}

// A sample or its # HELP / # TYPE line names a metric starting with `prefix`.
bool names_metric_with_prefix(std::string_view text, std::string_view prefix) {
    while (!text.empty()) {
        const std::size_t end = std::min(text.find('\n'), text.size());
        std::string_view line = text.substr(0, end);
        if (line.starts_with("# HELP ") || line.starts_with("# TYPE "))
            line.remove_prefix(7);
        if (line.starts_with(prefix))
            return true;
        text.remove_prefix(std::min(end + 1, text.size()));
    }
    return false;
}

// kvscope's own names first: `serve --metrics-names vllm` exports both.
std::optional<ServerKind> kind_from_metrics(const std::string& text) {
    if (names_metric_with_prefix(text, "kvscope:"))
        return ServerKind::Kvscope;
    if (names_metric_with_prefix(text, "llamacpp:"))
        return ServerKind::LlamaCpp;
    if (names_metric_with_prefix(text, "vllm:"))
        return ServerKind::Vllm;
    return std::nullopt;
}

} // namespace

struct RemoteMonitor::Impl {
    const ConnectOptions options;
    const OnSample on_sample;
    const Clock::time_point start = Clock::now();

    std::atomic<bool> stopping{false};
    httplib::Client poll_client;
    httplib::Client stream_client; // kvscope's /kv/stream
    std::thread poller;
    std::thread streamer;
    std::atomic<bool> poller_done{false};
    std::atomic<bool> streamer_done{true}; // until it starts

    // Guards the link fields, the faults, the readers and the subscribers;
    // held only while they are read or written, never across a request.
    mutable std::mutex state_mutex;
    std::condition_variable wake; // the poller's sleeps, cut short by stop
    std::optional<ServerKind> kind;
    LinkState link = LinkState::Connecting;
    std::optional<Clock::time_point> last_data;
    std::uint64_t reconnects = 0;
    std::uint64_t failed_polls = 0;         // in a row, since the last answer
    std::optional<Clock::duration> retry_in; // the sleep after a poll that got no answer
    FaultRing faults;
    std::set<std::string> said_once; // optional endpoints' failures, said once each
    std::unique_ptr<KvscopeReader> kvscope_reader;
    std::unique_ptr<LlamaCppReader> llamacpp_reader;
    std::unique_ptr<VllmReader> vllm_reader;
    std::vector<std::unique_ptr<KvEventsSubscriber>> subscribers;

    std::mutex publish_mutex; // one sample built and handed out at a time, in order
    mutable std::mutex latest_mutex;
    mutable std::condition_variable published;
    std::shared_ptr<const RemoteSample> latest;
    std::uint64_t number = 0;

    Impl(ConnectOptions o, OnSample callback)
        : options(std::move(o)), on_sample(std::move(callback)), poll_client(without_trailing_slash(options.url)), stream_client(without_trailing_slash(options.url)) {
        kind = options.kind;
        configure(poll_client, options.timeout);
        configure(stream_client, std::max<std::chrono::milliseconds>(options.timeout, kStreamReadTimeoutMin));
        publish();
        poller = std::thread([this] {
            run_poller();
            poller_done = true;
        });
    }

    ~Impl() {
        {
            std::lock_guard lock(state_mutex);
            stopping = true;
        }
        wake.notify_all();
        while (!poller_done || !streamer_done) {
            poll_client.stop();
            stream_client.stop();
            std::this_thread::sleep_for(kStopRetry);
        }
        poller.join();
        if (streamer.joinable())
            streamer.join();
    }

    void configure(httplib::Client& client, std::chrono::milliseconds read_timeout) const {
        const auto connect = std::min<std::chrono::milliseconds>(options.timeout, kConnectTimeoutCap);
        client.set_connection_timeout(connect);
        client.set_read_timeout(read_timeout);
        client.set_write_timeout(options.timeout);
        client.set_keep_alive(true);
        if (!options.api_key.empty())
            client.set_bearer_token_auth(options.api_key.c_str());
        // https://: Debian's cpp-httplib is built with OpenSSL and verifies the
        // certificate and host name; OpenSSL's default store honours
        // SSL_CERT_FILE, and KVSCOPE_CA_FILE names the one file to trust.
        if (const char* ca_file = std::getenv("KVSCOPE_CA_FILE"); ca_file && *ca_file)
            client.set_ca_cert_path(ca_file);
    }

    double now_s() const { return seconds(Clock::now() - start); }

    Answer get(const std::string& path) {
        return answer_of(poll_client.Get(path.c_str()), path, options.timeout);
    }

    // Sleeps `d`, or less when the monitor stops; false when it stops.
    bool sleep(Clock::duration d) {
        std::unique_lock lock(state_mutex);
        return !wake.wait_for(lock, d, [this] { return stopping.load(); });
    }

    void run_poller() {
        Clock::duration backoff = kFirstBackoff;
        while (!stopping) {
            const bool live = poll_once();
            set_retry(live ? std::nullopt : std::optional(backoff));
            publish();
            if (!sleep(live ? options.interval : backoff))
                return;
            backoff = live ? kFirstBackoff : std::min<Clock::duration>(2 * backoff, kMaxBackoff);
        }
    }

    void set_retry(std::optional<Clock::duration> delay) {
        std::lock_guard lock(state_mutex);
        retry_in = delay;
    }

    // One poll: the kind first, until it is known. True when the server answered.
    bool poll_once() {
        if (!kind) {
            std::string failure;
            const std::optional<ServerKind> found = detect_kind(failure);
            if (!found)
                return note_failure(failure);
            std::lock_guard lock(state_mutex);
            kind = found;
        }
        if (!kvscope_reader && !llamacpp_reader && !vllm_reader)
            start_kind();
        switch (*kind) {
        case ServerKind::Kvscope: return poll_kvscope();
        case ServerKind::LlamaCpp: return poll_llamacpp();
        case ServerKind::Vllm: return poll_vllm();
        }
        return false;
    }

    // What /v1/models, /props, /kv/snapshot or /metrics say the server is.
    // nullopt with `failure` set when it did not answer or named no kind.
    std::optional<ServerKind> detect_kind(std::string& failure) {
        const Answer models = get("/v1/models");
        if (!models.answered() || models.status == 401) {
            failure = models.failure;
            return std::nullopt;
        }
        if (models.ok())
            if (const auto found = kind_from_models(models.body))
                return found;
        if (const Answer props = get("/props"); props.ok() && is_llamacpp_props(props.body))
            return ServerKind::LlamaCpp;
        if (get("/kv/snapshot").ok())
            return ServerKind::Kvscope;
        if (const Answer metrics = get("/metrics"); metrics.ok())
            if (const auto found = kind_from_metrics(metrics.body))
                return found;
        failure = "cannot tell what kind of server answers at " + options.url +
                  " (/v1/models, /props, /kv/snapshot and /metrics name none): give its kind "
                  "(--server-kind kvscope|llama.cpp|vllm)";
        return std::nullopt;
    }

    void start_kind() {
        std::lock_guard lock(state_mutex);
        switch (*kind) {
        case ServerKind::Kvscope:
            kvscope_reader = std::make_unique<KvscopeReader>();
            streamer_done = false;
            streamer = std::thread([this] {
                run_streamer();
                streamer_done = true;
            });
            break;
        case ServerKind::LlamaCpp:
            llamacpp_reader = std::make_unique<LlamaCppReader>(options.kv_dtype, options.kv_unified);
            break;
        case ServerKind::Vllm:
            vllm_reader = std::make_unique<VllmReader>();
            start_subscribers();
            break;
        }
        if (*kind != ServerKind::Vllm && !options.kv_events.empty())
            faults.add("KV-events endpoints ignored: they are vLLM's, and this is a " +
                       std::string(server_kind_name(*kind)) + " server");
    }

    // One subscriber per rank; rank i's replay endpoint is kv_replay[i] when given.
    void start_subscribers() {
        for (std::size_t rank = 0; rank < options.kv_events.size(); ++rank) {
            KvEventsOptions o{.endpoint = options.kv_events[rank],
                              .replay_endpoint = std::nullopt,
                              .topic = options.kv_topic,
                              .rank = static_cast<int>(rank)};
            if (rank < options.kv_replay.size())
                o.replay_endpoint = options.kv_replay[rank];
            subscribers.push_back(std::make_unique<KvEventsSubscriber>(std::move(o)));
        }
    }

    // One endpoint a poll reads. A needed one that fails ends the poll; one
    // that adds to the picture but may be switched off (llama.cpp's /metrics
    // without --metrics) is said once when refused, `why` telling how to
    // turn it on. No answer at all fails the poll either way.
    struct Endpoint {
        std::string path;
        bool needed = true;
        std::string_view why = {};
    };
    using Bodies = std::map<std::string, std::string>; // by path, of the 200 answers

    // GETs `endpoints` in order, then feeds their bodies to the kind's
    // reader (state_mutex held) with the poll's time. True when the server answered.
    bool poll(const std::vector<Endpoint>& endpoints, const std::function<void(const Bodies&, double)>& feed) {
        Bodies bodies;
        for (const Endpoint& e : endpoints) {
            Answer a = get(e.path);
            if (a.ok())
                bodies.emplace(e.path, std::move(a.body));
            else if (e.needed || !a.answered())
                return note_failure(a.failure);
            else
                say_once(e.path, a.failure + (e.why.empty() ? std::string() : ": " + std::string(e.why)));
        }
        std::lock_guard lock(state_mutex);
        feed(bodies, now_s());
        return note_success();
    }

    void say_once(const std::string& path, std::string fault) {
        std::lock_guard lock(state_mutex);
        if (said_once.insert(path).second)
            faults.add(std::move(fault));
    }

    // Calls read(body) when `bodies` has `path`'s.
    static void with(const Bodies& bodies, const std::string& path, const std::function<void(const std::string&)>& read) {
        if (const auto it = bodies.find(path); it != bodies.end())
            read(it->second);
    }

    bool poll_kvscope() {
        return poll({{"/metrics"}, {"/v1/models", false}}, [this](const Bodies& b, double t) {
            kvscope_reader->read_metrics(b.at("/metrics"), t);
            with(b, "/v1/models", [this](const std::string& body) { kvscope_reader->read_models(body); });
        });
    }

    bool poll_llamacpp() {
        const std::vector<Endpoint> endpoints{
            {"/props"},
            {"/slots", false, "start llama-server with --slots to see its slots and KV tokens"},
            {"/metrics", false, "start llama-server with --metrics for tokens/s and queued requests"},
            {"/v1/models", false}};
        return poll(endpoints, [this](const Bodies& b, double t) {
            LlamaCppReader& reader = *llamacpp_reader;
            reader.read_props(b.at("/props"));
            with(b, "/slots", [&](const std::string& body) { reader.read_slots(body, t); });
            with(b, "/metrics", [&](const std::string& body) { reader.read_metrics(body, t); });
            with(b, "/v1/models", [&](const std::string& body) { reader.read_models(body); });
        });
    }

    bool poll_vllm() {
        return poll({{"/metrics"}, {"/v1/models", false}}, [this](const Bodies& b, double t) {
            vllm_reader->read_metrics(b.at("/metrics"), t);
            with(b, "/v1/models", [this](const std::string& body) { vllm_reader->read_models(body); });
        });
    }

    // Call with state_mutex held.
    bool note_success() {
        if (link == LinkState::Reconnecting)
            ++reconnects;
        link = LinkState::Live;
        last_data = Clock::now();
        failed_polls = 0;
        return true;
    }

    bool note_failure(std::string failure) {
        std::lock_guard lock(state_mutex);
        if (link == LinkState::Live)
            link = LinkState::Reconnecting;
        ++failed_polls;
        faults.add(std::move(failure));
        return false;
    }

    // kvscope: /kv/stream's snapshots into the reader, each published as it
    // comes; the stream is reopened with backoff when it ends.
    void run_streamer() {
        Clock::duration backoff = kFirstBackoff;
        while (!stopping) {
            bool received = false;
            client::SseReader sse;
            const httplib::Result result =
                stream_client.Get("/kv/stream", [&](const char* data, std::size_t length) {
                    sse.feed({data, length}, [&](const client::SseField& field) {
                        if (field.name != "data")
                            return;
                        read_snapshot(field.value);
                        received = true;
                    });
                    return !stopping.load();
                });
            if (stopping)
                return;
            note_stream_end(answer_of(result, "/kv/stream", options.timeout));
            if (received)
                backoff = kFirstBackoff;
            if (!sleep(backoff))
                return;
            backoff = std::min<Clock::duration>(2 * backoff, kMaxBackoff);
        }
    }

    // Said only while the polls succeed: when the server is down, the
    // poller's fault already says so.
    void note_stream_end(const Answer& a) {
        std::lock_guard lock(state_mutex);
        if (link == LinkState::Live)
            faults.add(a.ok() ? std::string("/kv/stream ended; reopening it") : a.failure);
    }

    void read_snapshot(std::string_view json) {
        {
            std::lock_guard lock(state_mutex);
            kvscope_reader->read_snapshot(json, now_s());
            last_data = Clock::now();
        }
        publish();
    }

    // Call with state_mutex held.
    void fill_from_kind(RemoteSample& s) {
        if (kvscope_reader) {
            faults.add(kvscope_reader->take_faults());
            kvscope_reader->fill(s);
        }
        if (llamacpp_reader) {
            faults.add(llamacpp_reader->take_faults());
            llamacpp_reader->fill(s);
        }
        if (vllm_reader) {
            faults.add(vllm_reader->take_faults());
            vllm_reader->fill(s);
        }
        for (const auto& subscriber : subscribers) {
            faults.add(subscriber->take_faults());
            RankSample& rank = rank_of(s, subscriber->options().rank);
            rank.prefix_cache = subscriber->sample();
            rank.kv_events_endpoint = subscriber->options().endpoint;
        }
    }

    // The sample's rank `rank`, made (in rank order) when /metrics has not named it.
    static RankSample& rank_of(RemoteSample& s, int rank) {
        auto at = std::lower_bound(s.ranks.begin(), s.ranks.end(), rank,
                                   [](const RankSample& r, int wanted) { return r.rank < wanted; });
        if (at == s.ranks.end() || at->rank != rank) {
            RankSample made;
            made.rank = rank;
            at = s.ranks.insert(at, std::move(made));
        }
        return *at;
    }

    std::shared_ptr<const RemoteSample> build() {
        auto s = std::make_shared<RemoteSample>();
        std::lock_guard lock(state_mutex);
        s->kind = kind.value_or(ServerKind::Kvscope);
        s->url = without_trailing_slash(options.url);
        s->time_s = now_s();
        s->link = link;
        if (last_data)
            s->data_age_s = seconds(Clock::now() - *last_data);
        s->reconnects = reconnects;
        s->failed_polls = failed_polls;
        if (retry_in)
            s->retry_in_s = seconds(*retry_in);
        fill_from_kind(*s);
        s->faults = faults.list();
        return s;
    }

    void publish() {
        std::lock_guard order(publish_mutex);
        std::shared_ptr<const RemoteSample> sample = build();
        {
            std::lock_guard lock(latest_mutex);
            latest = sample;
            ++number;
        }
        published.notify_all();
        if (on_sample)
            on_sample(std::move(sample));
    }
};

RemoteMonitor::RemoteMonitor(ConnectOptions options, OnSample on_sample) {
    validate(options);
    impl_ = std::make_unique<Impl>(std::move(options), std::move(on_sample));
}

RemoteMonitor::~RemoteMonitor() = default;

const ConnectOptions& RemoteMonitor::options() const { return impl_->options; }

std::shared_ptr<const RemoteSample> RemoteMonitor::latest() const {
    std::lock_guard lock(impl_->latest_mutex);
    return impl_->latest;
}

std::shared_ptr<const RemoteSample> RemoteMonitor::wait_next(std::uint64_t& seen,
                                                             std::chrono::milliseconds timeout) const {
    std::unique_lock lock(impl_->latest_mutex);
    impl_->published.wait_for(lock, timeout, [&] { return impl_->number > seen; });
    seen = impl_->number;
    return impl_->latest;
}

} // namespace kvscope::attach
