#include "engine/kv/prefix_hash.h"

namespace kvscope {
namespace {

// splitmix64's finalizer: every input bit affects every output bit.
std::uint64_t mix(std::uint64_t x) {
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    x ^= x >> 31;
    return x;
}

} // namespace

std::uint64_t block_hash(std::uint64_t parent_hash, std::span<const TokenId> tokens) {
    std::uint64_t h = mix(parent_hash ^ 0x9e3779b97f4a7c15ull);
    for (TokenId t : tokens)
        h = mix(h ^ static_cast<std::uint32_t>(t));
    h = mix(h ^ tokens.size());
    return h == kNoParentHash ? 1 : h; // keep kNoParentHash meaning "no parent"
}

std::uint64_t group_block_key(std::uint64_t hash, std::size_t group) {
    return group == 0 ? hash : mix(hash ^ mix(0x632be59bd9b4e019ull + group));
}

} // namespace kvscope
