#include "ui/server/server_view_model.h"

#include <algorithm>
#include <array>
#include <utility>

#include <spdlog/fmt/fmt.h>

#include "engine/core/byte_text.h"
#include "net/attach/kv_cache_types.h"

namespace kvscope::ui {
namespace {

using attach::LatencyQuantiles;
using attach::LinkState;
using attach::RemoteSample;
using attach::ServerFigures;
using attach::ServerKind;

constexpr double kF16Bits = 16;

// 1234567 -> "1,234,567".
std::string count(std::uint64_t n) {
    std::string digits = std::to_string(n);
    for (auto i = static_cast<std::ptrdiff_t>(digits.size()) - 3; i > 0; i -= 3)
        digits.insert(static_cast<std::size_t>(i), 1, ',');
    return digits;
}

std::string percent(double share) { return fmt::format("{:.1f}%", share * 100.0); }

std::string rate(double per_s) { return fmt::format("{:.1f}", per_s); }

std::string optional_number(const std::optional<double>& value) {
    return value ? fmt::format("{:.0f}", *value) : std::string("?");
}

// No observation in the window reads "—", as in the app's other figures.
std::string milliseconds(const std::optional<double>& ms) {
    return ms ? fmt::format("{:.1f} ms", *ms) : std::string("\u2014");
}

std::optional<std::uint64_t> tokens_capacity(const ServerFigures& f) {
    if (f.kv_tokens_capacity)
        return f.kv_tokens_capacity;
    if (f.kv_blocks_total && f.block_size)
        return *f.kv_blocks_total * *f.block_size;
    return std::nullopt;
}

void add(std::vector<FigureText>& rows, std::string label, std::string value) {
    rows.push_back({std::move(label), std::move(value)});
}

void add_kv_rows(std::vector<FigureText>& rows, const ServerFigures& f) {
    if (f.kv_usage)
        add(rows, "KV usage", percent(*f.kv_usage));
    if (f.kv_blocks_total) {
        std::string blocks = f.kv_blocks_used ? count(*f.kv_blocks_used) + " of " + count(*f.kv_blocks_total)
                                              : count(*f.kv_blocks_total) + " in all";
        if (f.block_size)
            blocks += fmt::format(" ({} tokens each)", *f.block_size);
        add(rows, "KV blocks", blocks);
    }
    // vLLM reports blocks, not tokens: blocks in use are not turned into tokens held.
    const auto used = f.kv_tokens_used;
    const auto capacity = tokens_capacity(f);
    if (used && capacity)
        add(rows, "KV tokens", count(*used) + " of " + count(*capacity));
    else if (capacity)
        add(rows, "KV tokens", count(*capacity) + " capacity");
    if (f.kv_bytes_per_token && capacity)
        add(rows, "KV bytes",
            (used ? bytes_text(static_cast<double>(*used * *f.kv_bytes_per_token)) + " of " : std::string()) +
                bytes_text(static_cast<double>(*capacity * *f.kv_bytes_per_token)) +
                fmt::format(" ({} per token)", bytes_text(static_cast<double>(*f.kv_bytes_per_token))));
}

// What storing K and V as `dtype` saves against f16: in bytes when the
// pool's bytes are known, else as a share.
void add_quant_row(std::vector<FigureText>& rows, const ServerFigures& f) {
    if (!f.kv_dtype)
        return;
    const auto bits = attach::kv_cache_type_bits(*f.kv_dtype);
    if (!bits) {
        add(rows, "KV dtype", *f.kv_dtype + " (its size is not known here)");
        return;
    }
    add(rows, "KV dtype", *f.kv_dtype);
    if (*bits >= kF16Bits)
        return;
    const double saved_share = 1.0 - *bits / kF16Bits;
    const auto capacity = tokens_capacity(f);
    if (f.kv_bytes_per_token && capacity) {
        const double pool = static_cast<double>(*capacity * *f.kv_bytes_per_token);
        const double as_f16 = pool * kF16Bits / *bits;
        add(rows, "Saved vs f16", bytes_text(as_f16 - pool) + " (" + percent(saved_share) + ")");
    } else {
        add(rows, "Saved vs f16", percent(saved_share) + " of the KV bytes (pool bytes not reported)");
    }
}

void add_request_rows(std::vector<FigureText>& rows, const ServerFigures& f, ServerKind kind) {
    if (f.running || f.waiting) {
        const bool llama = kind == ServerKind::LlamaCpp;
        add(rows, "Requests",
            fmt::format("{} {} · {} {}", optional_number(f.running), llama ? "processing" : "running",
                        optional_number(f.waiting), llama ? "deferred" : "waiting"));
    }
    if (f.preemptions)
        add(rows, "Preemptions", optional_number(f.preemptions));
    // Each ended request once, by how it ended, as the server counts them;
    // one it does not count reads "—" (vLLM before its "error" reason), a
    // server that counts none (llama.cpp) gets no row rather than zeros.
    if (f.requests_completed || f.requests_aborted || f.requests_failed) {
        const auto ended = [](const std::optional<double>& n) {
            return n ? count(static_cast<std::uint64_t>(*n)) : std::string("\u2014");
        };
        add(rows, kRequestsEndedLabel,
            fmt::format("completed {} · aborted {} · failed {}", ended(f.requests_completed),
                        ended(f.requests_aborted), ended(f.requests_failed)));
    }
    if (f.prompt_tokens_per_s || f.generation_tokens_per_s)
        add(rows, "Tokens/s",
            fmt::format("prompt {} · generation {}", f.prompt_tokens_per_s ? rate(*f.prompt_tokens_per_s) : "?",
                        f.generation_tokens_per_s ? rate(*f.generation_tokens_per_s) : "?"));
    if (f.prefix_hit_rate)
        add(rows, "Prefix hit rate", percent(*f.prefix_hit_rate));
}

void add_latency_row(std::vector<FigureText>& rows, const char* label, const LatencyQuantiles& q) {
    if (q.p50_ms || q.p99_ms)
        add(rows, label, "p50 " + milliseconds(q.p50_ms) + " · p99 " + milliseconds(q.p99_ms));
}

std::vector<FigureText> figure_rows(const ServerFigures& f, ServerKind kind) {
    std::vector<FigureText> rows;
    // The server's own histogram first: from when it received the request
    // (kvscope: submit(); vLLM: arrival at its front end; llama.cpp: the
    // slot's start). The dashboards' TTFT is the engine's, measured otherwise.
    add_latency_row(rows, kServerTtftLabel, f.ttft);
    add_latency_row(rows, "Inter-token", f.itl);
    add_kv_rows(rows, f);
    if (kind != ServerKind::Kvscope) // a kvscope server's dtype costs are the KV quantization dashboard's
        add_quant_row(rows, f);
    add_request_rows(rows, f, kind);
    return rows;
}

std::string plural(std::uint64_t n, const char* word) { return fmt::format("{} {}{}", n, word, n == 1 ? "" : "s"); }

// While no poll answers: the attempts made and when the next comes.
std::string retrying(const RemoteSample& s) {
    std::string text = plural(s.failed_polls, "attempt") + " so far";
    if (s.retry_in_s)
        text += fmt::format(", retrying every {:g} s", *s.retry_in_s);
    return text;
}

std::string freshness(const RemoteSample& s, std::optional<double> age_s) {
    std::string text;
    switch (s.link) {
    case LinkState::Connecting:
        text = s.failed_polls ? "Connecting: no answer, " + retrying(s) : "Connecting";
        break;
    case LinkState::Live:
        text = s.reconnects ? "Live (reconnected " + plural(s.reconnects, "time") + ")" : "Live";
        break;
    case LinkState::Reconnecting: text = "Reconnecting: " + retrying(s); break;
    }
    if (age_s)
        text += fmt::format(" · data {:.1f} s old", *age_s);
    else
        text += " · no data yet";
    return text;
}

// Figures kept from before the server stopped answering, and how old.
std::string stale(const RemoteSample& s, std::optional<double> age_s) {
    if (s.link == LinkState::Live || !age_s)
        return {};
    return fmt::format("Last figures, as of {:.0f} s ago: the server is not answering", *age_s);
}

// Until the server has answered, its kind is the monitor's placeholder, not
// what the server is.
std::string title(const RemoteSample& s) {
    if (s.data_age_s)
        return server_kind_title(s.kind) + " at " + s.url;
    return (s.link == LinkState::Reconnecting ? "No answer yet from " : "Connecting to ") + s.url;
}

SlotRow slot_row(const attach::SlotSample& slot) {
    std::string text = fmt::format("Slot {} · {} · {} of {} tokens", slot.id, slot.busy ? "busy" : "idle",
                                   count(slot.tokens), count(slot.n_ctx));
    if (slot.prompt_tokens || slot.decoded)
        text += fmt::format(" (prompt {}, decoded {})", slot.prompt_tokens ? count(*slot.prompt_tokens) : "?",
                            slot.decoded ? count(*slot.decoded) : "?");
    return {slot.id, slot.n_ctx, slot.tokens, slot.reserved_free(), slot.busy, std::move(text)};
}

// The slots together are llama.cpp's KV cache: each reserves its n_ctx
// whole, so what it does not hold is reserved waste, counted as kvscope's
// contiguous mode counts it (a share of every slot's tokens).
std::string slot_summary(const std::vector<attach::SlotSample>& slots) {
    std::uint64_t reserved = 0, held = 0, unused = 0, busy = 0;
    for (const attach::SlotSample& slot : slots) {
        reserved += slot.n_ctx;
        held += slot.tokens;
        unused += slot.reserved_free();
        busy += slot.busy ? 1 : 0;
    }
    if (slots.empty())
        return "No slots reported.";
    return fmt::format("{} slots ({} busy) reserve {} tokens: {} held, {} reserved but unused ({} reserved waste)",
                       slots.size(), busy, count(reserved), count(held), count(unused),
                       percent(reserved ? static_cast<double>(unused) / static_cast<double>(reserved) : 0.0));
}

// llama.cpp's two caches of a model with window layers (remote_sample.h):
// the full-attention one at the slots' capacity; the window one by what it
// keeps, since its size depends on -ub and --swa-full, which the server
// does not report.
void add_llama_cache_rows(std::vector<FigureText>& rows, const attach::RemoteSample& s) {
    const auto layers = [](std::uint32_t n) { return fmt::format("{} layer{}", n, n == 1 ? "" : "s"); };
    const auto per_token = [](const std::optional<std::uint64_t>& bytes) {
        return bytes ? fmt::format(" · {} per token", bytes_text(static_cast<double>(*bytes))) : std::string();
    };
    const auto capacity = tokens_capacity(s.total);
    for (const attach::LlamaKvCache& c : s.llama_kv_caches) {
        if (c.window == 0) {
            std::string text = layers(c.n_layers) + per_token(c.bytes_per_token);
            if (c.bytes_per_token && capacity)
                text += fmt::format(" · {} at {} tokens", bytes_text(static_cast<double>(*capacity * *c.bytes_per_token)),
                                    count(*capacity));
            add(rows, "Full-attention cache", text);
        } else {
            add(rows, fmt::format("Sliding-window cache ({} tokens)", count(c.window)),
                layers(c.n_layers) + per_token(c.bytes_per_token) +
                    fmt::format(" · keeps each sequence's last {} tokens and one ubatch (-ub); size not reported",
                                count(c.window)));
        }
    }
}

// "Group 1 · sliding window 512": a hybrid model's KV cache group, in the
// words its events use (vLLM's kv_cache_spec_kind, underscores as spaces).
std::string group_title(const attach::PrefixCacheGroupSample& g) {
    std::string title = fmt::format("Group {}", g.group);
    if (g.kind) {
        std::string kind = *g.kind;
        std::ranges::replace(kind, '_', ' ');
        title += " · " + kind;
        if (g.sliding_window)
            title += fmt::format(" {}", *g.sliding_window);
    }
    return title;
}

PrefixCacheView prefix_cache_view(const attach::PrefixCacheSample& p) {
    PrefixCacheView view{p.chain_lengths, {}};
    add(view.figures, "Cached blocks", count(p.blocks));
    add(view.figures, "Prefix chains", fmt::format("{} (longest {} blocks)", count(p.chains), p.longest_chain));
    add(view.figures, "Events",
        fmt::format("{} stored · {} removed · {} cleared", count(p.stored), count(p.removed), count(p.cleared)));
    add(view.figures, "Batches",
        fmt::format("{} received · {} replayed · {} lost", count(p.batches), count(p.replayed), count(p.lost)));
    if (p.age_s)
        add(view.figures, "Last batch", fmt::format("{:.1f} s ago", *p.age_s));
    else
        add(view.figures, "Last batch", "none yet");
    if (p.groups.size() > 1)
        for (const attach::PrefixCacheGroupSample& g : p.groups)
            add(view.figures, group_title(g),
                fmt::format("{} cached blocks · {} chains (longest {} blocks)", count(g.blocks), count(g.chains),
                            g.longest_chain));
    return view;
}

RankView rank_view(const attach::RankSample& r) {
    RankView view;
    view.title = fmt::format("Rank {}", r.rank);
    if (r.kv_events_endpoint)
        view.title += " · " + *r.kv_events_endpoint;
    view.figures = figure_rows(r.figures, ServerKind::Vllm);
    if (r.prefix_cache)
        view.prefix_cache = prefix_cache_view(*r.prefix_cache);
    else
        view.note = "No prefix-cache map: no KV-events endpoint was given for this rank.";
    return view;
}

} // namespace

std::string server_kind_title(ServerKind kind) {
    switch (kind) {
    case ServerKind::Kvscope: return "kvscope server";
    case ServerKind::LlamaCpp: return "llama.cpp server";
    case ServerKind::Vllm: return "vLLM server";
    }
    return "server";
}

ServerView server_view(const RemoteSample& s, double since_sample_s) {
    ServerView view;
    view.kind = s.kind;
    view.link = s.link;
    view.url = s.url;
    view.title = title(s);
    view.model = "Model: " + s.model.value_or(s.data_age_s ? "not reported" : "not known yet");
    const std::optional<double> age_s = s.data_age_s ? std::optional(*s.data_age_s + since_sample_s) : std::nullopt;
    view.freshness = freshness(s, age_s);
    view.stale = stale(s, age_s);
    view.figures = figure_rows(s.total, s.kind);
    for (const attach::SlotSample& slot : s.slot_samples)
        view.slot_rows.push_back(slot_row(slot));
    if (s.kind == ServerKind::LlamaCpp) {
        view.slot_summary = slot_summary(s.slot_samples);
        add_llama_cache_rows(view.figures, s);
    }
    for (const attach::RankSample& rank : s.ranks)
        view.ranks.push_back(rank_view(rank));
    view.cannot_tell = attach::server_cannot_tell(s);
    view.faults = s.faults;
    view.has_engine = s.engine != nullptr && s.engine->pool != nullptr;
    return view;
}

} // namespace kvscope::ui
