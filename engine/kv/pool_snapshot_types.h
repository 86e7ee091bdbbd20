#pragma once

#include <cstdint>
#include <optional>

#include "engine/kv/kv_ids.h"

namespace kvscope {

// What a physical block is doing, as a block map shows it.
enum class BlockState : std::uint8_t {
    Free,       // holds nothing
    Used,       // one sequence holds it and has written at least one slot
    Shared,     // more than one sequence holds it (fork, prefix cache hit)
    Reserved,   // held but not yet written (contiguous reservation)
    CachedFree, // no holder, but its full, hashed content can still be reused
};

// One block in a snapshot. Owners are in PoolSnapshot::owners[owner_begin, +owner_count).
struct BlockInfo {
    BlockState state = BlockState::Free;
    std::uint16_t fill = 0; // slots holding a token
    std::uint32_t ref_count = 0;
    std::uint32_t owner_begin = 0;
    std::uint32_t owner_count = 0;
    // CachedFree: the sequence that held it last (it may have ended since;
    // EngineSnapshot::ended_seqs says whose it was). nullopt otherwise.
    std::optional<SeqId> last_holder = std::nullopt;
    // The KV cache group whose table took it last (kv_groups.h; 0 in a
    // dense model), and whether it went back to the pool because that
    // group's sliding window left it behind (and was not taken since).
    std::uint16_t group = 0;
    bool left_window = false;

    bool operator==(const BlockInfo&) const = default;
};

} // namespace kvscope
