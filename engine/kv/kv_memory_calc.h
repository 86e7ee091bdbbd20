#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "engine/kv/kv_dtype.h"
#include "engine/kv/kv_layout.h"

namespace kvscope {

// "How much memory will my context use?" — the question the calculator
// answers, for every KV dtype at once.
struct KvMemoryQuestion {
    KvGeometry geometry;
    std::uint32_t block_size = 16;
    std::uint64_t tokens_per_sequence = 0;
    std::uint64_t sequences = 1;
    // With a device: how many such sequences fit next to the weights.
    std::optional<std::uint64_t> device_bytes;
    std::uint64_t weight_bytes = 0;
    double memory_fraction = 0.9; // share of device memory the engine may use (vLLM's default)
};

struct KvMemoryAnswer {
    KvDtype dtype = KvDtype::F16;
    std::uint64_t bytes_per_token = 0;
    std::uint64_t bytes_per_block = 0;
    std::uint64_t bytes_per_sequence = 0; // whole blocks: what paging allocates, + the KIVI tail
    std::uint64_t tail_bytes = 0;         // KIVI: each sequence's f16 tail (included above)
    std::uint64_t fixed_bytes = 0;        // per pool, outside the blocks (fp8 scales)
    std::uint64_t total_bytes = 0;        // sequences * bytes_per_sequence + fixed_bytes
    std::optional<std::uint64_t> sequences_that_fit; // when a device is given
    std::optional<std::uint64_t> kv_budget_bytes;    // device * fraction - weights, floored at 0
};

KvMemoryAnswer answer_kv_memory(const KvMemoryQuestion& q, KvDtype dtype);
std::vector<KvMemoryAnswer> answer_kv_memory_all_dtypes(const KvMemoryQuestion& q);

} // namespace kvscope
