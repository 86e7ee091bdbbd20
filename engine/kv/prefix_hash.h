#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "engine/kv/kv_ids.h"

namespace kvscope {

// The prefix-cache identity of a full block: a hash of its token ids chained
// with the hash of the block before it, so equal hashes mean equal prefixes
// up to and including this block (vLLM's scheme). The first block's parent
// is kNoParentHash. 64 bits: a collision is as likely as a cosmic-ray flip.
inline constexpr std::uint64_t kNoParentHash = 0;

std::uint64_t block_hash(std::uint64_t parent_hash, std::span<const TokenId> tokens);

// The key a KV cache group's block is cached under: the block's hash for
// group 0 (a dense model's only group), mixed with the group otherwise, so
// that each group's copy of a prefix is found on its own (vLLM's
// BlockHashWithGroupId).
std::uint64_t group_block_key(std::uint64_t hash, std::size_t group);

} // namespace kvscope
