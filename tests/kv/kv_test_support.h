// Helpers for the KV cache tests: a small real layout, token fingerprints
// written into slots, and checks that read them back.
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#include "engine/kv/kv_cache_manager.h"

namespace kvscope::test {

// 2 layers, 2 KV heads, head_dim 8, f16: 64 bytes per token.
inline KvLayout small_layout(std::uint32_t block_size) { return KvLayout({2, 2, 8}, KvDtype::F16, block_size); }

inline KvCacheConfig config(std::uint32_t blocks, std::uint32_t block_size, AllocationMode mode,
                            bool prefix_caching = true, std::uint32_t swap_blocks = 0) {
    return KvCacheConfig{small_layout(block_size), blocks, mode, prefix_caching, swap_blocks, 0.0};
}

// What a runner would write for token `token` at `position`: the first
// bytes of the K row of layer 1, head 1 (the last row of the block's K
// region, so a mis-addressed write is caught too).
inline std::uint64_t fingerprint(TokenId token, std::uint32_t position) {
    return (std::uint64_t{static_cast<std::uint32_t>(token)} << 32) ^ (position * 0x9e3779b9u) ^ 0x5bd1e995u;
}

inline void write_token(KvCacheManager& kv, SlotRef slot, TokenId token, std::uint32_t position) {
    const std::uint64_t f = fingerprint(token, position);
    std::memcpy(kv.block_data(slot.block) + kv.layout().k_offset(1, 1, slot.slot), &f, sizeof f);
}

inline std::uint64_t read_token(const KvCacheManager& kv, SlotRef slot) {
    std::uint64_t f = 0;
    std::memcpy(&f, kv.block_data(slot.block) + kv.layout().k_offset(1, 1, slot.slot), sizeof f);
    return f;
}

// Writes the prompt tokens from `from` on, as a prefill would, its chunk
// covering what the groups hold (the full blocks join the prefix cache).
inline void write_prompt(KvCacheManager& kv, SeqId seq, const std::vector<TokenId>& prompt, std::uint32_t from) {
    kv.cover(seq, kv.covered_tokens(seq));
    for (std::uint32_t p = from; p < prompt.size(); ++p)
        write_token(kv, kv.slot_of(seq, 0, p), prompt[p], p);
}

// Index of the first position whose slot does not hold `tokens`' fingerprint, or -1.
inline int first_wrong_slot(const KvCacheManager& kv, SeqId seq, const std::vector<TokenId>& tokens) {
    for (std::uint32_t p = 0; p < tokens.size(); ++p)
        if (read_token(kv, kv.slot_of(seq, 0, p)) != fingerprint(tokens[p], p))
            return static_cast<int>(p);
    return -1;
}

inline std::vector<TokenId> tokens(std::size_t n, TokenId first) {
    std::vector<TokenId> t(n);
    for (std::size_t i = 0; i < n; ++i)
        t[i] = first + static_cast<TokenId>(i);
    return t;
}

} // namespace kvscope::test
