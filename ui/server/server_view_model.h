#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "net/attach/remote_sample.h"

namespace kvscope::ui {

// One line of figures: "KV tokens" · "1,234 / 4,096".
struct FigureText {
    std::string label;
    std::string value;

    bool operator==(const FigureText&) const = default;
};

// One llama.cpp slot as the slot map draws it: a row of n_ctx tokens,
// `tokens` of them held, the rest reserved but unused (the contiguous
// allocator's reserved waste).
struct SlotRow {
    int id = 0;
    std::uint32_t n_ctx = 0;
    std::uint32_t tokens = 0;
    std::uint32_t reserved_free = 0;
    bool busy = false;
    std::string text; // "slot 0 · busy · 412 of 2,048 tokens (prompt 400, decoded 12)"

    bool operator==(const SlotRow&) const = default;
};

// One vLLM rank's prefix cache as its KV events describe it.
struct PrefixCacheView {
    std::vector<std::uint32_t> chain_lengths; // blocks per cached prefix chain, longest first
    std::vector<FigureText> figures;          // blocks, chains, stored/removed/replayed/lost, age

    bool operator==(const PrefixCacheView&) const = default;
};

struct RankView {
    std::string title; // "Rank 1 · tcp://10.0.0.2:5558"
    std::vector<FigureText> figures;
    std::optional<PrefixCacheView> prefix_cache;
    std::string note; // why there is no prefix cache, when there is none

    bool operator==(const RankView&) const = default;
};

// What the connected view shows of one RemoteSample, worded: the server
// panel and its widgets only lay these out and paint them. A figure the
// server does not report gets no row; `cannot_tell` says so instead.
struct ServerView {
    attach::ServerKind kind = attach::ServerKind::Kvscope;
    attach::LinkState link = attach::LinkState::Connecting;
    std::string url;       // as the sample has it
    std::string title;     // "llama.cpp server at http://127.0.0.1:8080" (ending with the URL)
    std::string model;     // "Model: stories260K" ("Model: not reported")
    // "Live · data 0.4 s old", "Reconnecting: 5 attempts so far, retrying every 4 s · data 12.0 s old"
    std::string freshness;
    // The server is not answering and these figures are its last ones:
    // "Last figures, as of 12 s ago" (empty while Live or before any data).
    // The panel greys them.
    std::string stale;
    std::vector<FigureText> figures; // the whole server (vLLM: summed over ranks)
    std::vector<SlotRow> slot_rows;  // llama.cpp
    std::string slot_summary;        // the slots' reserved waste, as kvscope's contiguous mode counts it
    std::vector<RankView> ranks;     // vLLM, ascending rank
    std::vector<std::string> cannot_tell;
    std::vector<std::string> faults; // oldest first
    bool has_engine = false;         // kvscope: its EngineSnapshot feeds the block map and dashboards

    bool operator==(const ServerView&) const = default;
};

// The label of the server's TTFT row: the server's own measure, told apart
// from the engine snapshots' (dashboards: arrival at the engine), first
// among the figures of the connected view.
inline constexpr const char* kServerTtftLabel = "TTFT (server: request received \u2192 first token)";
// The row of the requests a server ended: completed, aborted, failed, as it
// counts them (ServerFigures; a kvscope server's are its engine's own).
inline constexpr const char* kRequestsEndedLabel = "Requests ended";

// `since_sample_s`: seconds since the sample was published, added to its
// data's age (the panel ticks while the server is away).
ServerView server_view(const attach::RemoteSample& sample, double since_sample_s = 0);

// "llama.cpp server", "kvscope server", "vLLM server".
std::string server_kind_title(attach::ServerKind kind);


} // namespace kvscope::ui
