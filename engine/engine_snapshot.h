// The engine's picture of itself after a step: the one contract between an
// engine and whoever shows it. The app's panels paint it, the server's
// /kv/snapshot serializes it (engine/snapshot_json.h; docs/snapshot.md gives
// the JSON field by field) and a remote source rebuilds it from that JSON.
//
// It holds values, never sentences: enums, names, counts. Wording is the
// reader's (the UI's is in ui/model_info_panel.h). What a source cannot know
// is std::nullopt, or a null `pool`, never a filled-in guess; every other
// field is always known.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/core/backend.h"
#include "engine/core/percentiles.h"
#include "engine/kv/pool_memory.h"
#include "engine/kv/pool_snapshot.h"
#include "engine/sched/scheduler.h"

namespace kvscope {

using RequestId = std::uint64_t;

// One sequence of a request (a request with n > 1 has n of them): what the
// engine knows of it beyond its KV cache row. The row itself (tokens with
// K/V slots, block table, waste) is EngineSnapshot::kv_row(seq), sent once.
struct SeqSnapshot {
    SeqId seq = 0;                  // the KV cache's id for it
    RequestId request = 0;          // the add_request() id it belongs to
    std::uint32_t index = 0;        // which of the request's n samples, from 0
    SeqStatus status = SeqStatus::Waiting;
    std::uint32_t prompt_tokens = 0;
    std::uint32_t generated = 0;    // tokens sampled so far
    // Waiting: how many waiting sequences the scheduler admits before it
    // (0: it is next, held back by the KV cache's room or max_num_seqs).
    // nullopt when it is not waiting, or the source does not know.
    std::optional<std::uint32_t> queue_position = std::nullopt;
    std::uint64_t client_tag = 0;   // its request's RequestParams::client_tag

    // Its length in tokens, prompt and generated. The KV row may count fewer
    // (a prompt still in chunked prefill, the token sampled last step).
    std::uint32_t tokens() const { return prompt_tokens + generated; }

    bool operator==(const SeqSnapshot&) const = default;
};

// A sequence that has ended but left blocks in the prefix cache (their
// BlockInfo::last_holder is `seq`): whose they were, so a reader can colour
// them as the conversation they came from.
struct EndedSeq {
    SeqId seq = 0;
    RequestId request = 0;
    std::uint64_t client_tag = 0; // its request's RequestParams::client_tag

    bool operator==(const EndedSeq&) const = default;
};

// Where the engine computes and where its KV pool's bytes live.
struct DeviceSnapshot {
    Backend backend = Backend::Cpu;            // what runs the forward pass: Cpu or Cuda, never Auto
    MemoryPlace kv_memory = MemoryPlace::Host; // the KV pool's place (the swap pool is always host memory)
    std::optional<std::string> name;           // "CPU" or the GPU's name, e.g. "NVIDIA H200"
    // Bytes of the GPU holding the pool, free as of the snapshot
    // (cudaMemGetInfo); unknown when the pool is in host memory.
    std::optional<std::uint64_t> memory_total;
    std::optional<std::uint64_t> memory_free;

    bool operator==(const DeviceSnapshot&) const = default;
};

// An immutable picture of the engine after a step, cheap to hand to another
// thread: the UI paints these and nothing else.
struct EngineSnapshot {
    std::uint64_t step = 0; // steps run so far
    double time_s = 0;      // seconds since the engine started
    DeviceSnapshot device;
    // Blocks, one KV row per sequence holding K/V, fragmentation, swap pool.
    // Null: the source has no picture of its pool.
    std::shared_ptr<const PoolSnapshot> pool;
    std::vector<SeqSnapshot> seqs; // every live sequence, ascending seq
    // Every ended sequence some cached-free block names as its last holder,
    // ascending seq (live last holders, swapped ones, are in `seqs`).
    std::vector<EndedSeq> ended_seqs;
    std::size_t running = 0, waiting = 0, swapped = 0; // sequences in each SeqStatus
    std::uint64_t preemptions = 0;        // since the engine started
    // Requests that ended, each counted once by how it ended: completed
    // (every sample by stop or length), aborted (a sample aborted, none
    // failed) or failed (a sample ended with an error). Their sum is every
    // request that ended.
    std::uint64_t completed_requests = 0;
    std::uint64_t aborted_requests = 0;
    std::uint64_t failed_requests = 0;
    std::uint64_t refused_requests = 0;   // refused by add_request (never ran, no id)
    std::uint64_t prompt_tokens = 0;      // computed so far (prefix-cache hits excluded)
    std::uint64_t generated_tokens = 0;
    // Throughput of the engine's recent work: tokens computed by the steps
    // that ended in the 5 s up to the last step (always the last one, however
    // long) over the seconds those steps took. Idle time is in neither; an
    // idle engine keeps the rates of its last work (engine/serving_metrics.h).
    double prompt_tokens_per_s = 0;
    double generation_tokens_per_s = 0;
    // Seconds spent inside Engine::step() since the engine started: between
    // two snapshots, its growth is the time the engine worked and the rest of
    // time_s's growth it was idle (or between steps).
    double busy_s = 0;
    double last_step_s = 0; // how long the last step took; 0 before the first
    // Of last_step_s, the seconds in mixture-of-experts FFNs (router and
    // experts); 0 for a dense model or a backend that does not measure it.
    double last_step_expert_s = 0;
    Percentiles ttft;                     // time to first token
    Percentiles itl;                      // inter-token latency
    double prefix_hit_rate = 0;           // prefix-cache hits / prompt tokens looked up; 0 before any lookup
    std::uint64_t prefix_hit_tokens = 0;  // prompt tokens served from the prefix cache

    // seq's KV row in the pool; null while it holds no K/V (waiting) or when
    // the pool is unknown.
    const SequenceInfo* kv_row(SeqId seq) const {
        if (!pool)
            return nullptr;
        const auto it = std::ranges::lower_bound(pool->sequences, seq, {}, &SequenceInfo::id);
        return it != pool->sequences.end() && it->id == seq ? &*it : nullptr;
    }
};

} // namespace kvscope
