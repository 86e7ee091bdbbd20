#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/engine_snapshot.h"

namespace kvscope::ui {

// What the sequences in one snapshot would cost in each KV dtype, for the
// model and block size of the engine's pool. Every byte comes from KvLayout
// (through kv_memory_calc for the "fits" figure).
struct KvDtypeCost {
    KvDtype dtype = KvDtype::F16;
    std::string unavailable;           // why KvLayout refuses this geometry; empty when it does not
    std::uint64_t bytes_per_token = 0;
    std::uint64_t kv_bytes = 0;        // the snapshot's sequences at their current lengths (+ fixed bytes)
    std::optional<std::uint64_t> sequences_that_fit; // of the mean current length, in this pool's bytes
};

struct KvQuantCosts {
    KvGeometry geometry;
    std::uint32_t block_size = 0;
    KvDtype pool_dtype = KvDtype::F16;
    std::uint64_t pool_bytes = 0;   // the pool's blocks and fixed bytes, in its own dtype
    std::size_t sequences = 0;      // the snapshot's sequences, waiting ones included
    std::uint64_t context_tokens = 0; // their tokens, summed
    std::uint64_t mean_tokens = 0;    // per sequence, rounded up; 0 without sequences
    std::vector<KvDtypeCost> rows;    // all_kv_dtypes() order
};

// Empty rows when the snapshot has no pool.
KvQuantCosts kv_quant_costs(const EngineSnapshot& snapshot);

} // namespace kvscope::ui
