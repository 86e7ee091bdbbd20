#include "engine/kv/contiguous_reservation.h"

#include <algorithm>

namespace kvscope {

std::size_t contiguous_reservation_blocks(const KvLayout& layout, std::size_t group, std::size_t max_tokens,
                                          std::size_t chunk_tokens) {
    return layout.group_blocks(group, max_tokens, chunk_tokens);
}

ContiguousCounterfactual contiguous_counterfactual(const PoolSnapshot& pool) {
    ContiguousCounterfactual c;
    c.pool_blocks = pool.fragmentation.total_blocks;
    c.pool_slots = pool.fragmentation.total_slots();
    for (const SequenceInfo& seq : pool.sequences) {
        if (seq.swapped)
            continue;
        // Paged mode lets a sequence grow past what it was admitted with.
        const std::size_t max_tokens = std::max(seq.num_tokens, seq.max_tokens);
        ++c.sequences;
        for (std::size_t g = 0; g < pool.layout.num_groups(); ++g) {
            const std::size_t reserved_blocks = contiguous_reservation_blocks(pool.layout, g, max_tokens, pool.chunk_tokens);
            // A window group's ring holds its last reservation's worth of tokens.
            const std::size_t tokens = std::min<std::size_t>(seq.num_tokens, reserved_blocks * pool.layout.block_size());
            const SequenceWaste waste = sequence_waste(pool.layout, tokens, reserved_blocks);
            c.token_slots += tokens;
            c.internal_waste_slots += waste.internal_slots;
            c.reserved_waste_slots += waste.reserved_slots;
            c.reserved_blocks += reserved_blocks;
        }
    }
    return c;
}

} // namespace kvscope
