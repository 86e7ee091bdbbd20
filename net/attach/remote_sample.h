// net/attach: what kvscope knows of a server it watches, after one poll.
// Every kind of server (kvscope-cli serve, llama.cpp's llama-server, vLLM)
// becomes a RemoteSample; the app's dashboards and `kvscope-cli top` paint
// it. As in EngineSnapshot, what a kind of server cannot tell is nullopt
// (or an empty list, or a null `engine`), never a filled-in guess; the
// reader says so in words (`server_cannot_tell`).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/engine_snapshot.h"

namespace kvscope::attach {

enum class ServerKind { Kvscope, LlamaCpp, Vllm };

// "kvscope", "llama.cpp", "vllm": the names --server-kind and --json use.
std::string_view server_kind_name(ServerKind kind);
std::optional<ServerKind> parse_server_kind(std::string_view name);

// p50 and p99 of a latency over the last minute, in milliseconds, from a
// server's histogram (bucket interpolation, as Prometheus' histogram_quantile).
// nullopt: no observation in that minute, or no such histogram.
struct LatencyQuantiles {
    std::optional<double> p50_ms;
    std::optional<double> p99_ms;

    bool operator==(const LatencyQuantiles&) const = default;
};

// The figures `top` prints, for a whole server or one vLLM rank.
struct ServerFigures {
    // KV occupancy. Blocks where the server has blocks (kvscope, vLLM), tokens
    // where it knows them (kvscope; llama.cpp from its slots).
    std::optional<std::uint64_t> kv_blocks_total, kv_blocks_used;
    std::optional<std::uint64_t> kv_tokens_capacity, kv_tokens_used;
    std::optional<double> kv_usage; // 0..1: of blocks (kvscope, vLLM) or of tokens (llama.cpp)
    std::optional<std::uint32_t> block_size;          // tokens per block
    std::optional<std::string> kv_dtype;              // as the server (or, for llama.cpp, the user) names it
    std::optional<std::uint64_t> kv_bytes_per_token;  // K and V, all layers; from the layout or the model file
    std::optional<double> running, waiting;           // requests (llama.cpp: processing, deferred)
    std::optional<double> preemptions;                // since the server started
    // Requests that ended since the server started, each once: completed
    // (stop or length), aborted, failed (an error). kvscope: its engine's
    // counts; vLLM: request_success_total by finished_reason (failed only
    // where it has an "error" reason); llama.cpp counts none.
    std::optional<double> requests_completed, requests_aborted, requests_failed;
    std::optional<double> prompt_tokens_per_s;        // over the last minute
    std::optional<double> generation_tokens_per_s;    // over the last minute
    std::optional<double> prefix_hit_rate;            // 0..1, hits / queried tokens over the last minute
    LatencyQuantiles ttft;                            // time to first token
    LatencyQuantiles itl;                             // inter-token latency

    bool operator==(const ServerFigures&) const = default;
};

// llama.cpp: one slot, a contiguous reservation of n_ctx tokens of KV
// (the layout the PagedAttention paper measures waste in).
struct SlotSample {
    int id = 0;
    std::uint32_t n_ctx = 0;   // tokens the slot reserves
    std::uint32_t tokens = 0;  // tokens it holds: prompt + decoded (an idle slot may keep its last prompt)
    bool busy = false;         // is_processing
    std::optional<std::uint32_t> prompt_tokens; // n_prompt_tokens of its task
    std::optional<std::uint32_t> decoded;       // next_token.n_decoded

    // Reserved but unused: n_ctx - tokens (kvscope's contiguous-mode
    // "reserved" waste, for one slot).
    std::uint32_t reserved_free() const { return n_ctx > tokens ? n_ctx - tokens : 0; }
    bool operator==(const SlotSample&) const = default;
};

// One KV cache group of a hybrid model's prefix cache (vLLM's group_idx:
// each group caches its own blocks under the same hashes), as its events
// describe it.
struct PrefixCacheGroupSample {
    std::int64_t group = 0;              // group_idx; events without one: 0
    std::optional<std::string> kind;     // kv_cache_spec_kind, as the last BlockStored said
    std::optional<std::int64_t> sliding_window; // kv_cache_spec_sliding_window, likewise
    std::uint64_t blocks = 0;            // cached blocks of this group now
    std::uint64_t chains = 0;
    std::uint32_t longest_chain = 0;

    bool operator==(const PrefixCacheGroupSample&) const = default;
};

// llama.cpp: one of the KV caches llama-server keeps. A model with
// sliding-window layers gets two (src/llama-kv-cache-iswa.cpp): one for the
// full-attention layers, as long as the context, and one for the window
// layers of min(n_ctx, n_swa * (unified ? sequences : 1) + n_ubatch) cells
// padded to 256, or the whole context with --swa-full. The server reports
// neither cache (nor n_swa, -ub or --swa-full): the layers and the window
// come from the model file /props names, when it is readable here.
struct LlamaKvCache {
    std::uint32_t window = 0;   // 0: the full-attention cache; else n_swa, tokens
    std::uint32_t n_layers = 0;
    std::optional<std::uint64_t> bytes_per_token; // its layers' K and V, in the given cache type

    bool operator==(const LlamaKvCache&) const = default;
};

// vLLM: the prefix cache of one rank as its KV events describe it. Events
// carry block hashes, never physical block ids: this is a set of cached
// blocks chained by parent hash, not a block map. Figures count every
// group; `groups` splits them.
struct PrefixCacheSample {
    std::uint64_t blocks = 0;       // cached blocks now (stored and not removed)
    std::uint64_t chains = 0;       // roots: blocks whose parent is not cached (or none)
    std::uint32_t longest_chain = 0;// blocks in the longest root-to-leaf prefix
    std::uint64_t stored = 0;       // BlockStored blocks since attach
    std::uint64_t removed = 0;      // BlockRemoved blocks since attach
    std::uint64_t cleared = 0;      // AllBlocksCleared events since attach
    std::uint64_t batches = 0;      // event batches received (live and replayed)
    std::uint64_t replayed = 0;     // batches recovered through the replay socket
    std::uint64_t lost = 0;         // batches missed and not recovered (state resynced)
    std::optional<std::uint64_t> last_seq;
    std::optional<double> age_s;    // seconds since the last batch
    // The blocks of each cached prefix chain, longest first, at most 64:
    // how many blocks deep each chain is (for the view's drawing).
    std::vector<std::uint32_t> chain_lengths;
    // Every group an event has named (or group 0 alone, for a model with
    // one), ascending group.
    std::vector<PrefixCacheGroupSample> groups;

    bool operator==(const PrefixCacheSample&) const = default;
};

struct RankSample {
    int rank = 0;                 // vLLM's `engine` label / data_parallel_rank
    ServerFigures figures;        // from /metrics, for this rank
    std::optional<PrefixCacheSample> prefix_cache; // from its KV-events endpoint, when given
    std::optional<std::string> kv_events_endpoint;

    bool operator==(const RankSample&) const = default;
};

// The state of the link to the server.
enum class LinkState {
    Connecting,   // before the first answer
    Live,         // the last poll answered
    Reconnecting, // the server went away (or answers garbage): retrying with backoff
};
std::string_view link_state_name(LinkState state); // "connecting", "live", "reconnecting"

struct RemoteSample {
    ServerKind kind = ServerKind::Kvscope;
    std::string url;                  // as given, without a trailing '/'
    std::optional<std::string> model; // the served model's id
    double time_s = 0;                // seconds since the monitor started
    LinkState link = LinkState::Connecting;
    std::optional<double> data_age_s; // seconds since the newest data was read
    std::uint64_t reconnects = 0;     // times the link came back after going down
    // Polls in a row that got no answer (since the last answer, or since
    // the monitor started): the attempts a down server has had. 0 while Live.
    std::uint64_t failed_polls = 0;
    // While the last poll got no answer: the seconds until the next one
    // (the backoff, 0.5 s doubling to 8 s). nullopt while Live.
    std::optional<double> retry_in_s;
    // The newest faults, oldest first, at most 16: "counters reset (server
    // restarted)", "metrics line 12 skipped: ...", "kv events rank 1: batches
    // 41-44 lost". Cleared never; bounded.
    std::vector<std::string> faults;

    ServerFigures total;              // the whole server (vLLM: summed over ranks)
    std::vector<SlotSample> slot_samples; // llama.cpp only ("slots" is a Qt macro)
    // llama.cpp with a model file readable here that has window layers: its
    // two caches, full attention first; empty otherwise.
    std::vector<LlamaKvCache> llama_kv_caches;
    std::vector<RankSample> ranks;    // vLLM only, ascending rank
    // kvscope only: the server's own engine snapshot (/kv/stream), so every
    // dashboard works as for a local engine. Null for the other kinds.
    std::shared_ptr<const EngineSnapshot> engine;
};

// What this kind of server does not report, in a sentence each, for the
// view to say instead of drawing it ("no block map: llama.cpp reserves one
// contiguous context per slot and reports tokens per slot, not blocks").
std::vector<std::string> server_cannot_tell(const RemoteSample& sample);

} // namespace kvscope::attach
