#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/kv/pool_snapshot.h"
#include "engine/sched/scheduler.h"

namespace kvscope {

using RequestId = std::uint64_t;

// One sequence of a request (a request with n > 1 has n of them).
struct SeqSnapshot {
    SeqId seq = 0;
    RequestId request = 0;
    std::uint32_t index = 0; // which of the request's n samples
    SeqStatus status = SeqStatus::Waiting;
    std::uint32_t tokens = 0;
    std::uint32_t prompt_tokens = 0;
    std::uint32_t generated = 0;
    std::uint32_t max_tokens = 0; // prompt + max_new_tokens: what a contiguous allocator reserves
};

struct Percentiles {
    double p50_ms = 0;
    double p95_ms = 0;
};

// An immutable picture of the engine after a step, cheap to hand to another
// thread: the UI paints these and nothing else.
struct EngineSnapshot {
    std::uint64_t step = 0;
    double time_s = 0; // since the engine started
    std::shared_ptr<const PoolSnapshot> pool; // blocks, per-sequence block tables and waste, fragmentation
    std::vector<SeqSnapshot> seqs;
    std::size_t running = 0, waiting = 0, swapped = 0;
    std::uint64_t preemptions = 0;
    std::uint64_t completed_requests = 0;
    std::uint64_t prompt_tokens = 0;    // computed so far (prefix-cache hits excluded)
    std::uint64_t generated_tokens = 0;
    double prompt_tokens_per_s = 0;     // over the last few seconds
    double generation_tokens_per_s = 0;
    Percentiles ttft;                   // time to first token
    Percentiles itl;                    // inter-token latency
    double prefix_hit_rate = 0;         // prompt tokens served from the prefix cache / looked up
    std::uint64_t prefix_hit_tokens = 0;
    std::string device;                 // where the KV pool lives: "host memory (CPU)", "VRAM of <GPU>"
    std::size_t vram_total = 0;         // the GPU's memory (cudaMemGetInfo) when the pool is in VRAM, else 0
    std::size_t vram_free = 0;
};

} // namespace kvscope
