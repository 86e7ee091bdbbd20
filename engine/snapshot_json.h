// EngineSnapshot <-> JSON: what the server's /kv/snapshot sends and what a
// remote monitor turns back into a snapshot. docs/snapshot.md describes the
// shape field by field; a change to it bumps kSnapshotSchemaVersion.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include "engine/engine_snapshot.h"

namespace kvscope {

// 2: rates per second of step time, busy_s and last_step_s; blocks'
// last_holder and ended_seqs. 3: refused_requests, the latencies' p90_ms
// and p99_ms, each sequence's client_tag. 4: KV cache groups: the
// layout's layer_windows and keep_whole, the pool's chunk_tokens, blocks'
// group and left_window, sequences' group_blocks and left_window_blocks.
// 5: last_step_expert_s (mixture-of-experts models). 6: aborted_requests
// and failed_requests; completed_requests counts only requests that ended
// normally (by stop or length).
inline constexpr int kSnapshotSchemaVersion = 6;

// Every field of the snapshot, keys in the documented order; unknown values
// are null.
nlohmann::ordered_json to_json(const EngineSnapshot& snapshot);

// The snapshot `j` describes. Throws kvscope::Error naming the key when j is
// of another schema version, lacks a key, holds a value of the wrong type or
// an unknown word, or contradicts itself (a block id outside the pool, KV
// rows out of order, a block filled beyond its size).
EngineSnapshot engine_snapshot_from_json(const nlohmann::ordered_json& j);

} // namespace kvscope
