#include "ui/dashboards/contiguous_counterfactual.h"

#include <algorithm>
#include <unordered_map>

namespace kvscope::ui {

ContiguousCounterfactual contiguous_counterfactual(const EngineSnapshot& snapshot) {
    ContiguousCounterfactual c;
    if (!snapshot.pool)
        return c;
    const PoolSnapshot& pool = *snapshot.pool;
    const KvLayout& layout = pool.layout;
    const std::size_t block_size = layout.block_size();
    c.pool_blocks = pool.fragmentation.total_blocks;
    c.pool_slots = pool.fragmentation.total_slots();

    std::unordered_map<SeqId, std::uint32_t> max_tokens;
    for (const SeqSnapshot& s : snapshot.seqs)
        max_tokens[s.seq] = s.max_tokens;
    for (const SequenceInfo& seq : pool.sequences) {
        if (seq.swapped)
            continue;
        const auto found = max_tokens.find(seq.id);
        // A sequence the engine no longer lists (finishing this step) keeps
        // the reservation its blocks show.
        const std::size_t reserved_tokens =
            std::max<std::size_t>(seq.num_tokens, found != max_tokens.end() ? found->second : seq.capacity_tokens);
        const std::size_t written_blocks = layout.blocks_for_tokens(seq.num_tokens);
        const std::size_t reserved_blocks = layout.blocks_for_tokens(reserved_tokens);
        ++c.sequences;
        c.token_slots += seq.num_tokens;
        c.internal_waste_slots += written_blocks * block_size - seq.num_tokens;
        c.reserved_waste_slots += (reserved_blocks - written_blocks) * block_size;
        c.reserved_blocks += reserved_blocks;
    }
    return c;
}

} // namespace kvscope::ui
