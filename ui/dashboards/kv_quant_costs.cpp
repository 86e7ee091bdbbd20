#include "ui/dashboards/kv_quant_costs.h"

#include "engine/core/error.h"
#include "engine/kv/kv_memory_calc.h"

namespace kvscope::ui {
namespace {

// The sequences whose K/V is in the pool now, and their tokens.
void countHolders(const PoolSnapshot& pool, KvQuantCosts& c) {
    for (const SequenceInfo& s : pool.sequences) {
        if (s.swapped || s.num_tokens == 0)
            continue;
        ++c.sequences;
        c.context_tokens += s.num_tokens;
    }
    if (c.sequences > 0)
        c.mean_tokens = (c.context_tokens + c.sequences - 1) / c.sequences;
}

KvDtypeCost costIn(KvDtype dtype, const KvQuantCosts& c, const KvMemoryQuestion& fit) {
    KvDtypeCost row;
    row.dtype = dtype;
    try {
        const KvLayout layout(c.geometry, dtype, c.block_size, c.groups);
        row.bytes_per_token = layout.bytes_per_token();
        if (c.holdsKv()) {
            row.kv_bytes = c.used_blocks * layout.bytes_per_block() + layout.fixed_bytes() +
                           c.sequences * layout.tail_bytes();
            row.sequences_that_fit = answer_kv_memory(fit, dtype).sequences_that_fit;
        }
    } catch (const Error& e) {
        row.unavailable = e.what();
    }
    return row;
}

} // namespace

KvQuantCosts kv_quant_costs(const EngineSnapshot& snapshot) {
    KvQuantCosts c;
    if (!snapshot.pool)
        return c;
    const PoolSnapshot& pool = *snapshot.pool;
    c.geometry = pool.layout.geometry();
    c.groups = pool.layout.groups();
    c.chunk_tokens = pool.chunk_tokens;
    c.block_size = pool.layout.block_size();
    c.pool_dtype = pool.layout.dtype();
    c.pool_bytes = pool.fragmentation.total_blocks * pool.layout.bytes_per_block() + pool.layout.fixed_bytes();
    c.used_blocks = pool.fragmentation.used_blocks;
    countHolders(pool, c);

    // "How many sequences like these fit in this pool's memory": the
    // calculator's question with the pool's bytes as the whole device.
    KvMemoryQuestion fit;
    fit.geometry = c.geometry;
    fit.layer_windows = c.groups.layer_windows();
    fit.keep_whole = c.groups.keeps_whole();
    fit.chunk_tokens = c.chunk_tokens;
    fit.block_size = c.block_size;
    fit.tokens_per_sequence = c.mean_tokens;
    fit.device_bytes = c.pool_bytes;
    fit.memory_fraction = 1.0;
    for (KvDtype dtype : all_kv_dtypes())
        c.rows.push_back(costIn(dtype, c, fit));
    return c;
}

} // namespace kvscope::ui
