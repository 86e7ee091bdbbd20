#include "engine/kv/contiguous_reservation.h"

#include <algorithm>

namespace kvscope {

std::size_t contiguous_reservation_blocks(const KvLayout& layout, std::size_t max_tokens) {
    return layout.blocks_for_tokens(max_tokens);
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
        const std::size_t reserved_blocks = contiguous_reservation_blocks(pool.layout, max_tokens);
        const SequenceWaste waste = sequence_waste(pool.layout, seq.num_tokens, reserved_blocks);
        ++c.sequences;
        c.token_slots += seq.num_tokens;
        c.internal_waste_slots += waste.internal_slots;
        c.reserved_waste_slots += waste.reserved_slots;
        c.reserved_blocks += reserved_blocks;
    }
    return c;
}

} // namespace kvscope
