#pragma once

#include <cstdint>

namespace kvscope {

using BlockId = std::uint32_t; // index of a physical block in a pool
using SeqId = std::uint64_t;   // a sequence the KV cache holds tokens for
using TokenId = std::int32_t;  // a vocabulary id

// A block table entry with no block: a sliding-window group's logical
// block that the window has left behind, or skipped by a prefix-cache hit.
inline constexpr BlockId kNoBlock = ~BlockId{0};

} // namespace kvscope
