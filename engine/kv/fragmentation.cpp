#include "engine/kv/fragmentation.h"

#include <algorithm>

namespace kvscope {
namespace {

// Free blocks lying in runs shorter than `needed` consecutive blocks.
std::size_t blocks_in_short_runs(std::span<const BlockInfo> blocks, std::size_t needed) {
    std::size_t stranded = 0, run = 0;
    auto close_run = [&] {
        if (run < needed)
            stranded += run;
        run = 0;
    };
    for (const BlockInfo& b : blocks) {
        if (b.ref_count == 0)
            ++run;
        else
            close_run();
    }
    close_run();
    return stranded;
}

} // namespace

SequenceWaste sequence_waste(const KvLayout& layout, std::size_t tokens, std::size_t held_blocks) {
    const std::size_t written = layout.blocks_for_tokens(tokens);
    return {written * layout.block_size() - tokens, (held_blocks - written) * layout.block_size()};
}

FragmentationStats compute_fragmentation(std::span<const BlockInfo> blocks, std::uint32_t block_size,
                                         AllocationMode mode, std::size_t pending_request_blocks) {
    FragmentationStats s;
    s.total_blocks = blocks.size();
    s.block_size = block_size;
    s.pending_request_blocks = pending_request_blocks;
    std::size_t run = 0;
    for (const BlockInfo& b : blocks) {
        if (b.ref_count == 0) {
            ++s.free_blocks;
            s.cached_free_blocks += b.state == BlockState::CachedFree;
            s.largest_free_run = std::max(s.largest_free_run, ++run);
            continue;
        }
        run = 0;
        ++s.used_blocks;
        s.token_slots += b.fill;
        if (b.fill > 0)
            s.internal_waste_slots += block_size - b.fill;
        else
            s.reserved_waste_slots += block_size;
    }
    if (mode == AllocationMode::Contiguous && s.free_blocks > 0) {
        const std::size_t needed = pending_request_blocks > 0 ? pending_request_blocks : s.largest_free_run;
        s.external_blocks = blocks_in_short_runs(blocks, needed);
    }
    return s;
}

} // namespace kvscope
