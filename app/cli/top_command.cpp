// kvscope-cli top: a running server's KV cache and load in the terminal
// (net/attach/remote_monitor.h watches it; this reads options and prints).
// On a terminal the view is redrawn in place every interval; into a pipe
// it prints one block (or with --json one JSON line) per interval. SIGINT
// and SIGTERM end it with exit code 0.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include <unistd.h>

#include "net/attach/remote_monitor.h"
#include "net/attach/remote_sample_json.h"
#include "app/cli/commands.h"
#include "app/cli/stop_signals.h"
#include "engine/core/error.h"

namespace kvscope::cli {
namespace {

using namespace std::chrono_literals;
using attach::LinkState;
using attach::RemoteSample;
using attach::ServerFigures;

// --once waits this long for the first complete answer before it gives up.
constexpr auto kOnceDeadline = 10s;
// --once with KV events: how many poll intervals the subscribers get to
// hear their publishers once the link is live.
constexpr int kEventsGraceIntervals = 3;

attach::ConnectOptions read_options(Args& args) {
    auto url = args.value("--url");
    if (!url)
        url = args.subcommand(); // `top https://HOST:PORT`, the URL alone
    if (!url)
        throw Error("top needs --url, the server's address, e.g. --url http://127.0.0.1:8000");
    attach::ConnectOptions o = attach::parse_connect_options({*url, args.value_or("--api-key", ""),
                                                              args.value_or("--server-kind", ""),
                                                              args.value_or("--kv-events", ""),
                                                              args.value_or("--kv-replay", ""),
                                                              args.value_or("--kv-topic", ""),
                                                              args.value_or("--kv-dtype", ""),
                                                              args.value_or("--kv-unified", "")});
    o.interval = std::chrono::milliseconds(static_cast<std::int64_t>(1000 * args.number_or("--interval", 1, 0.1, 3600)));
    attach::validate(o);
    return o;
}

// "-" for what the server did not say.
std::string text_of(const std::optional<double>& v, const char* format) {
    if (!v)
        return "-";
    char buffer[64];
    std::snprintf(buffer, sizeof buffer, format, *v);
    return buffer;
}

template <typename T>
std::string count_of(const std::optional<T>& v) {
    return v ? std::to_string(*v) : std::string("-");
}

std::string percent_of(const std::optional<double>& fraction) {
    return fraction ? text_of(100 * *fraction, "%.1f%%") : "-";
}

void print_figures(const ServerFigures& f) {
    std::printf("KV cache     %s used · blocks %s of %s (block %s tokens) · tokens %s of %s · %s\n",
                percent_of(f.kv_usage).c_str(), count_of(f.kv_blocks_used).c_str(),
                count_of(f.kv_blocks_total).c_str(), count_of(f.block_size).c_str(),
                count_of(f.kv_tokens_used).c_str(), count_of(f.kv_tokens_capacity).c_str(),
                f.kv_dtype.value_or("dtype -").c_str());
    std::printf("requests     running %s · waiting %s · preemptions %s\n", text_of(f.running, "%.0f").c_str(),
                text_of(f.waiting, "%.0f").c_str(), text_of(f.preemptions, "%.0f").c_str());
    std::printf("tokens/s     prompt %s · generation %s (last minute)\n",
                text_of(f.prompt_tokens_per_s, "%.1f").c_str(), text_of(f.generation_tokens_per_s, "%.1f").c_str());
    std::printf("latency ms   TTFT p50 %s p99 %s · ITL p50 %s p99 %s (last minute; TTFT: the server's, request received -> first token)\n",
                text_of(f.ttft.p50_ms, "%.1f").c_str(), text_of(f.ttft.p99_ms, "%.1f").c_str(),
                text_of(f.itl.p50_ms, "%.1f").c_str(), text_of(f.itl.p99_ms, "%.1f").c_str());
    std::printf("prefix cache hit rate %s (last minute)\n", percent_of(f.prefix_hit_rate).c_str());
}

void print_slots(const std::vector<attach::SlotSample>& slots) {
    if (slots.empty())
        return;
    std::printf("\nslot  state  tokens / n_ctx    reserved free  prompt  decoded\n");
    for (const attach::SlotSample& s : slots)
        std::printf("%4d  %-5s  %6u / %-6u  %13u  %6s  %7s\n", s.id, s.busy ? "busy" : "idle", s.tokens, s.n_ctx,
                    s.reserved_free(), count_of(s.prompt_tokens).c_str(), count_of(s.decoded).c_str());
}

void print_ranks(const std::vector<attach::RankSample>& ranks) {
    if (ranks.empty())
        return;
    std::printf("\nrank  KV used  blocks used/total  running  waiting  gen tok/s  "
                "prefix cache: blocks  chains  longest  stored  removed  lost\n");
    for (const attach::RankSample& r : ranks) {
        const ServerFigures& f = r.figures;
        std::printf("%4d  %7s  %8s/%-8s  %7s  %7s  %9s", r.rank, percent_of(f.kv_usage).c_str(),
                    count_of(f.kv_blocks_used).c_str(), count_of(f.kv_blocks_total).c_str(),
                    text_of(f.running, "%.0f").c_str(), text_of(f.waiting, "%.0f").c_str(),
                    text_of(f.generation_tokens_per_s, "%.1f").c_str());
        if (const auto& p = r.prefix_cache)
            std::printf("  %20llu  %6llu  %7u  %6llu  %7llu  %4llu\n", static_cast<unsigned long long>(p->blocks),
                        static_cast<unsigned long long>(p->chains), p->longest_chain,
                        static_cast<unsigned long long>(p->stored), static_cast<unsigned long long>(p->removed),
                        static_cast<unsigned long long>(p->lost));
        else
            std::printf("  %20s\n", "(no --kv-events)");
    }
}

void print_list(const char* title, const std::vector<std::string>& lines) {
    if (lines.empty())
        return;
    std::printf("\n%s\n", title);
    for (const std::string& line : lines)
        std::printf("  %s\n", line.c_str());
}

void print_view(const RemoteSample& s) {
    const bool kind_known = s.link != LinkState::Connecting; // remote_monitor.h: detected with the first answer
    std::printf("%s at %s · model %s · %s",
                kind_known ? std::string(attach::server_kind_name(s.kind)).c_str() : "server", s.url.c_str(),
                s.model.value_or("-").c_str(), std::string(attach::link_state_name(s.link)).c_str());
    std::printf(", data %s s old · reconnects %llu", text_of(s.data_age_s, "%.1f").c_str(),
                static_cast<unsigned long long>(s.reconnects));
    if (s.engine)
        std::printf(" · engine step %llu", static_cast<unsigned long long>(s.engine->step));
    std::printf("\n\n");
    print_figures(s.total);
    print_slots(s.slot_samples);
    print_ranks(s.ranks);
    print_list("recent faults (oldest first):", s.faults);
    print_list("what this server cannot tell:", attach::server_cannot_tell(s));
}

// Every rank given a KV-events endpoint has heard a batch from it.
bool every_rank_heard_events(const RemoteSample& s) {
    return !s.ranks.empty() && std::ranges::all_of(s.ranks, [](const attach::RankSample& r) {
               return !r.prefix_cache || r.prefix_cache->batches > 0;
           });
}

// Complete: the link is live, a kvscope server's engine snapshot is in,
// and every KV-event subscriber has heard its publisher, or had a few
// intervals to (an idle vLLM publishes nothing: then its caches are empty).
bool is_complete(const RemoteSample& s, std::chrono::steady_clock::time_point live_since,
                 const attach::ConnectOptions& o) {
    if (s.link != LinkState::Live || (s.kind == attach::ServerKind::Kvscope && !s.engine))
        return false;
    return o.kv_events.empty() || every_rank_heard_events(s) ||
           std::chrono::steady_clock::now() - live_since >= kEventsGraceIntervals * o.interval;
}

int print_once(const attach::ConnectOptions& options, bool json) {
    const attach::RemoteMonitor monitor(options);
    const auto deadline = std::chrono::steady_clock::now() + kOnceDeadline;
    std::optional<std::chrono::steady_clock::time_point> live_since;
    std::uint64_t seen = 0;
    for (auto s = monitor.latest(); std::chrono::steady_clock::now() < deadline; s = monitor.wait_next(seen, 100ms)) {
        if (s->link == LinkState::Live && !live_since)
            live_since = std::chrono::steady_clock::now();
        if (live_since && is_complete(*s, *live_since, options)) {
            if (json)
                std::printf("%s\n", attach::to_json(*s).dump().c_str());
            else
                print_view(*s);
            return 0;
        }
    }
    const auto s = monitor.latest();
    throw Error("no complete answer from " + options.url + " within " + std::to_string(kOnceDeadline.count()) +
                " s" + (s->faults.empty() ? std::string() : ": " + s->faults.back()));
}

int print_every_interval(const attach::ConnectOptions& options, bool json) {
    const sigset_t stop_signals = block_stop_signals(); // before the monitor's threads start
    const bool redraw = !json && isatty(STDOUT_FILENO);
    const attach::RemoteMonitor monitor(options);
    do {
        const auto s = monitor.latest();
        if (json) {
            std::printf("%s\n", attach::to_json(*s).dump().c_str());
        } else {
            if (redraw)
                std::fputs("\x1b[H\x1b[2J", stdout); // home, clear screen
            print_view(*s);
            if (!redraw)
                std::printf("\n");
        }
        std::fflush(stdout);
    } while (!stopped_within(stop_signals, options.interval));
    return 0;
}

} // namespace

int run_top(Args& args) {
    const attach::ConnectOptions options = read_options(args);
    const bool once = args.flag("--once");
    const bool json = args.flag("--json");
    args.finish();
    return once ? print_once(options, json) : print_every_interval(options, json);
}

} // namespace kvscope::cli
