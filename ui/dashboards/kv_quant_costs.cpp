#include "ui/dashboards/kv_quant_costs.h"

#include "engine/core/error.h"
#include "engine/kv/kv_memory_calc.h"

namespace kvscope::ui {

KvQuantCosts kv_quant_costs(const EngineSnapshot& snapshot) {
    KvQuantCosts c;
    if (!snapshot.pool)
        return c;
    const KvLayout& pool = snapshot.pool->layout;
    c.geometry = pool.geometry();
    c.block_size = pool.block_size();
    c.pool_dtype = pool.dtype();
    c.pool_bytes = snapshot.pool->fragmentation.total_blocks * pool.bytes_per_block() + pool.fixed_bytes();
    c.sequences = snapshot.seqs.size();
    for (const SeqSnapshot& s : snapshot.seqs)
        c.context_tokens += s.tokens();
    if (c.sequences > 0)
        c.mean_tokens = (c.context_tokens + c.sequences - 1) / c.sequences;

    // "How many sequences like these fit in this pool's memory": the
    // calculator's question with the pool's bytes as the whole device.
    KvMemoryQuestion fit;
    fit.geometry = c.geometry;
    fit.block_size = c.block_size;
    fit.tokens_per_sequence = c.mean_tokens;
    fit.device_bytes = c.pool_bytes;
    fit.memory_fraction = 1.0;
    for (KvDtype dtype : all_kv_dtypes()) {
        KvDtypeCost row;
        row.dtype = dtype;
        try {
            const KvLayout layout(c.geometry, dtype, c.block_size);
            row.bytes_per_token = layout.bytes_per_token();
            row.kv_bytes = layout.fixed_bytes();
            for (const SeqSnapshot& s : snapshot.seqs)
                row.kv_bytes += layout.bytes_for_tokens(s.tokens());
            if (c.mean_tokens > 0)
                row.sequences_that_fit = answer_kv_memory(fit, dtype).sequences_that_fit;
        } catch (const Error& e) {
            row.unavailable = e.what();
        }
        c.rows.push_back(std::move(row));
    }
    return c;
}

} // namespace kvscope::ui
