#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "engine/core/backend.h"
#include "engine/kv/allocation_mode.h"
#include "engine/kv/kv_dtype.h"
#include "engine/kv/kv_layout.h"
#include "engine/model/model_config.h"
#include "engine/sched/scheduler.h"

namespace kvscope {

// The default host swap pool, in KV pools (see Engine).
inline constexpr std::uint32_t kSwapPoolsPerKvPool = 4;
// The default KV budget, and the most suggested_kv_budget_mib offers.
inline constexpr double kDefaultKvBudgetMib = 256;

// Everything that configures an Engine, in one plain struct. The CLI, the
// app and JSON files use the same words as these field names.
struct EngineConfig {
    std::string model;            // GGUF path
    Backend backend = Backend::Auto; // where the forward pass and the KV pool run
    int threads = 0;              // kernel threads; 0: one per core
    KvDtype kv_dtype = KvDtype::F16;
    std::uint32_t block_size = 16;
    std::uint32_t num_blocks = 0; // KV pool size; 0: as many as kv_budget_mib holds
    double kv_budget_mib = kDefaultKvBudgetMib; // 0: suggested_kv_budget_mib for the model
    AllocationMode allocation = AllocationMode::Paged;
    // Swap by default: the swap pool is host memory, so preempting costs a
    // copy of the sequence's blocks and resuming another, where recompute
    // runs the model over all of its tokens again (minus prefix-cache hits)
    // -- on a CPU, milliseconds against seconds. vLLM leans to recompute
    // because a GPU recomputes fast and its swap crosses PCIe. A sequence
    // the swap pool cannot take is preempted by recompute.
    PreemptionMode preemption = PreemptionMode::Swap;
    bool prefix_caching = true;
    // Sliding-window layers keep the whole context, as full-attention ones
    // do (llama.cpp's --swa-full): for A/B against freeing what leaves the
    // window. The outputs are the same either way (those keys are masked).
    bool swa_full = false;
    std::uint32_t max_num_seqs = 64;
    std::uint32_t max_num_batched_tokens = 512;
    // Host swap pool; 0: kSwapPoolsPerKvPool times the KV pool when
    // preemption is swap (its pages are backed by RAM only once used).
    std::uint32_t swap_blocks = 0;
    double watermark = 0.01;       // fraction of blocks admission leaves free
    // fcfs: requests run in arrival order (bench serve, the server); priority:
    // RequestParams::priority first (the app: chat turns ahead of workloads).
    SchedulingPolicy scheduling_policy = SchedulingPolicy::Fcfs;
};

// The KV layout an engine with this config gives this model: its geometry,
// KV cache groups by the layers' windows (kept whole with swa_full), the
// config's dtype and block size.
KvLayout engine_kv_layout(const EngineConfig& config, const ModelConfig& model);

// The KV budget offered when nobody chose one: room for max_num_seqs
// sequences at the model's full context, at most kDefaultKvBudgetMib but
// never less than one full-context sequence (a chat may use the whole
// context), plus what lives outside the blocks. Whole MiB, rounded up.
// `layout` is the model's in the config's dtype and block size.
double suggested_kv_budget_mib(const EngineConfig& config, const KvLayout& layout, std::uint32_t context);

// The KV pool's blocks: num_blocks, else as many as the budget holds
// (kv_budget_mib, or the suggested one when it is 0) after what lives
// outside the blocks: fp8's scales and one KIVI tail per sequence the
// scheduler may run at once (max_num_seqs). Throws kvscope::Error when the
// budget holds no block.
std::uint32_t kv_pool_blocks(const EngineConfig& config, const KvLayout& layout, std::uint32_t context);
// What a pool of `blocks` takes in all: its blocks and what lives outside them.
double kv_pool_bytes(const EngineConfig& config, const KvLayout& layout, std::uint32_t blocks);

nlohmann::ordered_json to_json(const EngineConfig& config);
// Missing keys keep their defaults; unknown keys and bad values throw
// kvscope::Error naming the key.
EngineConfig engine_config_from_json(const nlohmann::ordered_json& j);
EngineConfig load_engine_config(const std::string& path);
void save_engine_config(const EngineConfig& config, const std::string& path);

} // namespace kvscope
