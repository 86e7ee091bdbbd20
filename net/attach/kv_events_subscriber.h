// net/attach: one vLLM rank's KV cache events, live. A ZeroMQ SUB socket on
// the rank's PUB endpoint (frames: topic, 8-byte big-endian sequence
// number, msgpack batch), decoded (kv_events.h) into the rank's prefix
// cache map (prefix_cache_map.h). On a gap in sequence numbers it asks the
// replay endpoint (DEALER to vLLM's ROUTER) for the missed batches; what
// the replay no longer holds is counted lost and the map resynced.
//
// Resync, honestly: events are deltas, so after a loss (a gap the replay
// cannot fill, an undecodable batch) the map cannot know what changed. It
// is emptied and rebuilt from the batches that follow, as on a fresh
// attach, and a fault says so. A sequence number that falls (the publisher
// restarted, its cache with it) empties the map too. Blocks cached before
// the attach are never announced again: the map shows what was stored since.
// Both replay layouts are read: after the delimiter, [seq, payload] (vLLM
// <= 0.25) or [topic, seq, payload] (>= 0.26), ended by seq 2^64-1.
//
// Its own thread does all socket work; sample() and take_faults() may be
// called from any thread.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "net/attach/prefix_cache_map.h"
#include "net/attach/remote_sample.h"

namespace kvscope::attach {

struct KvEventsOptions {
    std::string endpoint;                       // tcp://HOST:PORT (vLLM's endpoint with "*" replaced by its host)
    std::optional<std::string> replay_endpoint; // tcp://HOST:PORT of its replay_endpoint
    std::string topic;                          // "" takes every topic
    int rank = 0;
    // How long one replay may take before what it has not sent counts lost.
    std::chrono::milliseconds replay_timeout{1000};
    std::size_t max_blocks = PrefixCacheMap::kDefaultMaxBlocks; // the map's cap on blocks held
};

class KvEventsSubscriber {
public:
    explicit KvEventsSubscriber(KvEventsOptions options); // connects and starts at once
    ~KvEventsSubscriber();                                 // stops within ~100 ms
    KvEventsSubscriber(const KvEventsSubscriber&) = delete;
    KvEventsSubscriber& operator=(const KvEventsSubscriber&) = delete;

    const KvEventsOptions& options() const;
    PrefixCacheSample sample() const; // every field; age_s: since the last batch applied
    // Faults since the last call, oldest first, at most 64 kept: "rank 1:
    // batches 41-44 lost (the replay holds from 45): map emptied, ...",
    // "rank 0: batch 12 lost (undecodable: ...)", "publisher restarted",
    // blocks dropped at the cap, an unknown event type or a batch of another
    // data_parallel_rank (each said once).
    std::vector<std::string> take_faults();

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

} // namespace kvscope::attach
