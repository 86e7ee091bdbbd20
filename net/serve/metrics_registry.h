// net/serve: the server's Prometheus metrics. A prometheus-cpp registry fed
// by the engine thread (as a ServiceObserver: request latencies as they
// happen, gauges and counters from each published snapshot) and serialized
// as Prometheus text (exposition format 0.0.4) for GET /metrics.
//
// Series (README, "Prometheus metrics", lists them with their meaning), under
// `kvscope:`; with vllm_names the vLLM-named ones also under `vllm:`, so a
// vLLM Grafana dashboard works unchanged:
//   num_requests_running, num_requests_waiting (sequences; swapped-out
//   ones count as waiting, as vLLM v1 requeues preempted requests), kv_cache_usage_perc (blocks
//   held by sequences / all blocks; prefix-cached free blocks count as free,
//   as vLLM's), num_preemptions_total, prefix_cache_queries_total and
//   prefix_cache_hits_total (tokens), prompt_tokens_total,
//   generation_tokens_total, request_success_total{finished_reason},
//   time_to_first_token_seconds, inter_token_latency_seconds,
//   e2e_request_latency_seconds (histograms, vLLM's buckets),
//   cache_config_info{block_size, cache_dtype, num_gpu_blocks, bytes_per_token, ...}
// and kvscope's own: kv_cache_token_usage_perc (token slots holding a token /
// all slots), kv_internal_waste_perc (empty slots of blocks holding a token
// / all slots: in paged mode exactly block usage minus token usage),
// kv_free_blocks, kv_cached_blocks, kv_available_tokens, kv_bytes_per_token,
// and kv_cache_group_usage_perc{group, kind} (blocks one KV cache group's
// tables hold / all blocks, one series per group, summing to
// kv_cache_usage_perc; kind "full_attention" or "sliding_window_W").
// Every series carries a model_name label (and engine="0", as vLLM's).
// cache_config_info appears with the first snapshot that has a pool.
#pragma once

#include <memory>
#include <string>

#include "engine/service/engine_service.h"

namespace kvscope::serve {

struct MetricsOptions {
    std::string model_name;
    bool vllm_names = false; // --metrics-names vllm: the vLLM series under vllm: too
    // The served engine's configuration: cache_config_info's
    // enable_prefix_caching and kv_cache_memory_bytes (kv_pool_bytes, which
    // needs it for what lives outside the blocks). The pool's own figures
    // (blocks, block size, dtype, bytes per token) come from the snapshots.
    EngineConfig engine;
};

class MetricsRegistry final : public ServiceObserver {
public:
    explicit MetricsRegistry(const MetricsOptions& options);
    ~MetricsRegistry() override;

    void on_first_token(double ttft_s) override;
    void on_inter_token(double gap_s) override;
    void on_request_end(FinishReason reason, double e2e_s) override;
    // Gauges take the snapshot's values; counters grow by what the
    // snapshot's totals grew since the last one.
    void on_snapshot(const std::shared_ptr<const EngineSnapshot>& snapshot) override;

    // Prometheus text of every series; any thread.
    std::string serialize() const;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

} // namespace kvscope::serve
