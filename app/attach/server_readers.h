// app/attach: turning what a server answers into a RemoteSample. One reader
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
#include <string>
#include <string_view>
#include <vector>

#include "app/attach/remote_sample.h"

namespace kvscope::attach {

// kvscope-cli serve: /kv/stream's (or /kv/snapshot's) engine snapshot JSON,
// and /metrics (kvscope: names) for the last minute's TTFT/ITL p50/p99.
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
class LlamaCppReader {
public:
    // kv_dtype: the server's -ctk/-ctv type ("f16", "q8_0", ...), which it
    // does not report.
    explicit LlamaCppReader(std::string kv_dtype = "f16");
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

// vLLM: /metrics (every rank, by its `engine` label) and /v1/models.
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
