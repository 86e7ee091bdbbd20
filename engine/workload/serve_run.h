#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "engine/engine.h"
#include "engine/workload/workload.h"

namespace kvscope {

// Steps of one kind and the time they took.
struct StepTime {
    std::uint64_t steps = 0;
    double seconds = 0;
};

// What one engine configuration did with one workload. Means are weighted
// by the time each step took; fractions are of the whole KV pool.
struct ServeRunResult {
    EngineConfig config;
    std::uint32_t requests = 0;
    std::uint32_t completed = 0; // ended by length or stop
    std::uint32_t failed = 0;    // ended with an error
    double seconds = 0;
    std::uint64_t prompt_tokens = 0;
    std::uint64_t generated_tokens = 0;
    double mean_running = 0;
    std::size_t peak_running = 0;
    double token_occupancy = 0;
    double internal_waste = 0;
    double reserved_waste = 0;
    double external_fragmentation = 0;
    std::uint64_t preemptions = 0;
    std::uint64_t prefix_hit_tokens = 0; // prompt tokens whose K/V came from the prefix cache
    Percentiles ttft;
    std::uint32_t kv_blocks = 0;
    // Where the time went: steps that only decoded, by how many sequences
    // they decoded ([k] for k sequences), and steps with prompt (or
    // recomputed) tokens. Together they are the run's stepping time.
    std::vector<StepTime> decode_steps;
    StepTime prefill_steps;
    // A hash of every sample's tokens, by request and sample: equal for two
    // runs that generated the same text for the same workload.
    std::uint64_t outputs_digest = 0;

    double generation_tokens_per_s() const { return seconds > 0 ? static_cast<double>(generated_tokens) / seconds : 0; }
    double total_tokens_per_s() const {
        return seconds > 0 ? static_cast<double>(prompt_tokens + generated_tokens) / seconds : 0;
    }
};

// Feeds the workload to a fresh Engine through a WorkloadFeeder (requests
// arrive at their times) and steps until every request has ended.
ServeRunResult run_workload(const EngineConfig& config, std::shared_ptr<const Model> model,
                            const std::vector<WorkloadRequest>& workload, std::uint32_t n = 1);

} // namespace kvscope
