// tests/attach: a vLLM-shaped HTTP server on loopback, for the monitor's
// tests and the `fake-vllm` executable (fake_vllm_main.cpp). It answers
// what kvscope's attach reads from vLLM: /v1/models (owned_by "vllm",
// max_model_len), /metrics (text the test sets, vllm_metrics_text() builds
// one in vLLM's shape: every per-engine metric labelled by model_name and
// engine, counters with _total and _created, histograms, cache_config_info)
// and /health. The names and labels follow vllm/v1/metrics/loggers.py as
// /work/shared/design/REMOTE-PROTOCOLS.md section 2 describes it.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace kvscope::test {

// A Prometheus histogram over vLLM's latency buckets (seconds; loggers.py's
// TTFT buckets, trimmed to the useful range), counts not cumulated.
struct FakeHistogram {
    static constexpr std::array<double, 12> kBuckets{0.001, 0.005, 0.01, 0.02, 0.04, 0.06,
                                                     0.08,  0.1,   0.25, 0.5,  1.0,  2.5};
    std::array<std::uint64_t, kBuckets.size() + 1> counts{}; // the last: above every bucket
    double sum = 0;

    void observe(double seconds);
};

// One data-parallel rank's state, as vLLM's /metrics shows it.
struct FakeVllmRank {
    double kv_usage = 0; // 0..1, of blocks
    double running = 0, waiting = 0;
    double preemptions = 0;                       // counter
    double prompt_tokens = 0, generation_tokens = 0; // counters
    double prefix_queries = 0, prefix_hits = 0;   // counters, in tokens
    FakeHistogram ttft;                           // time to first token
    FakeHistogram itl;                            // inter-token latency
    std::uint32_t num_gpu_blocks = 1024;
    std::uint32_t block_size = 16;
    std::string cache_dtype = "auto";
    // The KV pool's bytes, as recent vLLM reports them; unset: the label is
    // left out, as older versions do.
    std::optional<std::uint64_t> kv_cache_memory_bytes;
};

// vLLM's /metrics for these ranks (rank i has engine="i").
std::string vllm_metrics_text(const std::string& model, const std::vector<FakeVllmRank>& ranks);

class FakeVllmServer {
public:
    // Listens on 127.0.0.1:`port` (0: a free one) at once; throws
    // std::runtime_error when it cannot.
    explicit FakeVllmServer(std::string model = "fake-vllm-model", int port = 0, std::uint32_t max_model_len = 2048);
    ~FakeVllmServer(); // stop()
    FakeVllmServer(const FakeVllmServer&) = delete;
    FakeVllmServer& operator=(const FakeVllmServer&) = delete;

    int port() const;
    std::string url() const; // http://127.0.0.1:PORT
    const std::string& model() const;

    void set_metrics(std::string text);
    // Every answer waits this long first (a server that answers slowly);
    // stop() cuts the wait short.
    void set_delay(std::chrono::milliseconds delay);
    // How many requests for `path` it has answered.
    int served(const std::string& path) const;
    // How many requests for `path` have reached it, answered or not (a
    // request counts here before it waits out the delay).
    int requested(const std::string& path) const;
    // Closes the socket and ends the requests in flight: the server is gone.
    void stop();

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

} // namespace kvscope::test
