// net/attach: turning what a server answers into a RemoteSample. One reader
// per kind of server, fed the bodies of its endpoints as the monitor polls
// them; plain C++ over text, no sockets (unit-tested on recorded answers).
//
// A reader never throws on what a server sends: a malformed body or line is
// a fault (take_faults), and the figures it would have changed keep their
// previous values. `t` is the poll's time in seconds (monotonic, from the
// monitor's start): rates and the last minute's latency quantiles are
// computed over it. Counters that fall mean the server restarted: rates
// restart from there, and a fault says so.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "net/attach/kv_cache_types.h"
#include "net/attach/remote_sample.h"

namespace kvscope::attach {

// kvscope-cli serve: /kv/stream's (or /kv/snapshot's) engine snapshot JSON
// (the figures, and tokens/s over the last minute from its totals), and
// /metrics (kvscope: names) for the last minute's TTFT/ITL p50/p99 and
// prefix hit rate; without /metrics those stay nullopt.
class KvscopeReader {
public:
    KvscopeReader();
    ~KvscopeReader();
    void read_snapshot(std::string_view json, double t);
    void read_metrics(std::string_view text, double t);
    void read_models(std::string_view json); // /v1/models: the model id
    void fill(RemoteSample& sample) const;   // total, model, engine
    std::vector<std::string> take_faults();

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

// llama.cpp's llama-server: /props, /slots, /metrics (when --metrics).
// Tokens a slot holds: its cached tokens (newer servers' n_prompt_tokens
// counts the slot's whole KV content, generated tokens included), else
// n_prompt_tokens + n_decoded, else n_past. KV capacity: the server does
// not say whether its KV is unified (one buffer all slots share, each
// slot's n_ctx the whole context) or split per slot; server_readers.cpp
// says how the reader decides. Bytes per token come from the model file
// /props names when it is readable here (a GGUF), with kv_dtype.
class LlamaCppReader {
public:
    // kv_dtype: the server's -ctk/-ctv type ("f16", "q8_0", ...), which it
    // does not report.
    // kv_unified: whether its slots share one KV buffer (-kvu), which it
    // does not report either; nullopt: guessed (server_readers.cpp).
    explicit LlamaCppReader(std::string kv_dtype = "f16", std::optional<bool> kv_unified = std::nullopt);
    ~LlamaCppReader();
    void read_props(std::string_view json);
    void read_slots(std::string_view json, double t);
    void read_metrics(std::string_view text, double t);
    void read_models(std::string_view json);
    void fill(RemoteSample& sample) const; // total, slots, model
    std::vector<std::string> take_faults();

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

// vLLM: /metrics (every rank, by its `engine` label; none = rank 0) and
// /v1/models. Rates, hit rates and latency quantiles are over the last
// minute; the total's latency quantiles are those of the ranks' histograms
// merged (bucket counts summed), as a Prometheus sum by (le) would give.
class VllmReader {
public:
    VllmReader();
    ~VllmReader();
    void read_metrics(std::string_view text, double t);
    void read_models(std::string_view json);
    // total (summed over ranks; kv_usage weighted by blocks), ranks' figures
    // (creating a RankSample per `engine` label), model. Prefix-cache
    // samples from KV events are the monitor's to add.
    void fill(RemoteSample& sample) const;
    std::vector<std::string> take_faults();

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

} // namespace kvscope::attach
