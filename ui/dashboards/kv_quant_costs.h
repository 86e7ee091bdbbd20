#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/engine_snapshot.h"

namespace kvscope::ui {

// What the KV the pool holds now would cost in each KV dtype, for the model
// and block size of the engine's pool. Every byte comes from KvLayout
// (through kv_memory_calc for the "fits" figure).
struct KvDtypeCost {
    KvDtype dtype = KvDtype::F16;
    std::string unavailable;           // why KvLayout refuses this geometry; empty when it does not
    std::uint64_t bytes_per_token = 0; // KvLayout::bytes_per_token(), as `kvscope-cli calc` shows it
    // The pool's blocks in use in this dtype (the block count does not
    // depend on the dtype), plus the fp8 scales and KIVI tails they need;
    // 0 while no sequence holds KV (see KvQuantCosts::holdsKv).
    std::uint64_t kv_bytes = 0;
    std::optional<std::uint64_t> sequences_that_fit; // of the mean current length, in this pool's bytes
};

struct KvQuantCosts {
    KvGeometry geometry;
    KvGroups groups = KvGroups::full(1); // the pool's KV cache groups
    std::uint32_t chunk_tokens = 0;      // the pool's: a window group's cap counts it
    std::uint32_t block_size = 0;
    KvDtype pool_dtype = KvDtype::F16;
    std::uint64_t pool_bytes = 0;     // the pool's blocks and fixed bytes, in its own dtype
    // Sequences holding KV in the pool: queued requests hold none, swapped
    // out ones hold theirs in the host swap pool.
    std::size_t sequences = 0;
    std::uint64_t used_blocks = 0;    // the pool's blocks in use (a shared block once)
    std::uint64_t context_tokens = 0; // tokens with a K/V slot, summed over those sequences
    std::uint64_t mean_tokens = 0;    // per sequence, rounded up; 0 without sequences
    std::vector<KvDtypeCost> rows;    // all_kv_dtypes() order

    bool holdsKv() const { return sequences > 0; }
};

// Empty rows when the snapshot has no pool.
KvQuantCosts kv_quant_costs(const EngineSnapshot& snapshot);

} // namespace kvscope::ui
