// net/attach: vLLM's KV cache events, decoded. One ZeroMQ message's msgpack
// payload becomes a KvEventBatch of plain structs; nothing here knows
// sockets (kv_events_subscriber.h) or the cache they describe
// (prefix_cache_map.h). Wire facts: /work/shared/design/REMOTE-PROTOCOLS.md
// section 1 (vLLM vllm/distributed/kv_events.py).
//
// vLLM has shipped two msgpack encodings and both are accepted, at both
// levels and in any mix: the batch as an array [ts, [events], rank?] or a
// map {ts, events, data_parallel_rank}; each event as a tagged array (its
// type name first, then its fields in declared order, trailing defaults
// omitted) or a map with a "type" key (fields by name, unknown keys
// ignored). Block hashes come as integers (uint64; a signed encoding's
// negative value is read as its two's complement) or as bytes (a SHA-256
// digest, 32 raw bytes). An array of more than 2^20 items, a map of more
// than 1,024 keys or nesting deeper than 8 is refused: no vLLM batch comes
// near them, and they bound what a hostile payload can make the decoder
// allocate.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "engine/core/error.h"

namespace kvscope::attach {

// A payload that is not a vLLM event batch: truncated, not msgpack, or a
// field of the wrong type. The message says which field and what was found.
class KvEventsError : public Error {
public:
    using Error::Error;
};

// A block's hash as one 64-bit key. vLLM's integer mode sends
// int.from_bytes(digest, "big") & (2^64 - 1); a bytes-mode digest is keyed
// by the same rule (its last 8 bytes, big-endian), so both modes give one
// block the same key.
using BlockHash = std::uint64_t;

// Full blocks newly cached, each chained to the one before it: the first's
// parent is `parent` (none: the prefix starts here), block i's is block i-1.
struct BlockStored {
    std::vector<BlockHash> hashes;
    std::optional<BlockHash> parent;
    std::uint64_t tokens = 0;             // length of token_ids
    std::uint32_t block_size = 0;         // tokens per block
    std::optional<std::string> medium;    // "GPU", "CPU" (offload); none: GPU
    std::optional<std::string> lora_name;
    // The KV cache group that cached them (hybrid models: each group has
    // its own blocks, and the same hashes come once per group), and what
    // kind of layers it holds: vLLM's kv_cache_spec_kind ("full_attention",
    // "sliding_window", "mla_attention", ...) and window in tokens. Set by
    // vLLM's KVCacheManager from each group's spec (vllm/v1/core/
    // kv_cache_manager.py, kv_cache_event_metadata; the words are
    // KVCacheSpecKind's in vllm/v1/kv_cache_interface.py); older vLLMs send
    // none, or group_idx alone.
    std::optional<std::int64_t> group_idx;
    std::optional<std::string> kv_cache_spec_kind;
    std::optional<std::int64_t> kv_cache_spec_sliding_window;

    bool operator==(const BlockStored&) const = default;
};

// Blocks evicted from the cache.
struct BlockRemoved {
    std::vector<BlockHash> hashes;
    std::optional<std::string> medium;
    std::optional<std::int64_t> group_idx; // the group whose blocks they were

    bool operator==(const BlockRemoved&) const = default;
};

// The whole prefix cache was reset (vLLM's reset_prefix_cache).
struct AllBlocksCleared {
    bool operator==(const AllBlocksCleared&) const = default;
};

using KvEvent = std::variant<BlockStored, BlockRemoved, AllBlocksCleared>;

struct KvEventBatch {
    double ts = 0;                          // the publisher's time.time(), seconds
    std::vector<KvEvent> events;
    std::optional<std::int64_t> data_parallel_rank;
    // Event types this decoder does not know (a newer vLLM), skipped: their
    // names, each once.
    std::vector<std::string> unknown_types;

    bool operator==(const KvEventBatch&) const = default;
};

// Throws KvEventsError for anything that is not one whole batch.
KvEventBatch decode_kv_event_batch(std::string_view payload);

// True for the GPU prefix cache's medium: none (vLLM's default) or "GPU".
bool is_gpu_medium(const std::optional<std::string>& medium);

} // namespace kvscope::attach
