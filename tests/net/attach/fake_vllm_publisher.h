// tests/attach: a vLLM KV-events publisher in miniature, for tests and
// fixtures. It speaks vLLM's wire format (REMOTE-PROTOCOLS.md section 1):
// a PUB socket sending [topic, 8-byte big-endian seq, msgpack batch], and a
// ROUTER replay socket answering ["", start_seq] with the buffered batches
// from start_seq on and an end marker (seq 2^64-1), in either layout vLLM
// has shipped. Both bind on 127.0.0.1 with OS-chosen ports.
//
// It can do what a real publisher does to a subscriber: change encoding,
// lose batches on the PUB side that the replay still holds (withhold), skip
// sequence numbers outright (skip), age batches out of the replay buffer
// (forget_replay_before) and restart from sequence 0 (restart).
//
// publish(), withhold() and the rest may be called from one thread at a
// time; the replay socket is served on the publisher's own thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "net/attach/kv_events.h"

namespace kvscope::attach::testing {

enum class BatchShape { Array, Map };         // [ts, events, rank] or {ts, events, data_parallel_rank}
enum class EventShape { TaggedArray, Map };   // ["BlockStored", ...] or {"type": "BlockStored", ...}
enum class HashShape { Int, Bytes };          // uint64, or 32 raw bytes
enum class ReplayLayout { V025, V026 };       // after the delimiter: [seq, payload] or [topic, seq, payload]

struct Encoding {
    BatchShape batch = BatchShape::Array;
    EventShape events = EventShape::TaggedArray;
    HashShape hashes = HashShape::Int;
};

// The batch as vLLM's msgspec encoder writes it (omit_defaults: optional
// fields that are None are left out; in arrays only trailing ones). Each
// BlockStored carries `tokens` token ids. Each name in unknown_types
// becomes one event of that type (with a field "x"), for decoders to skip.
std::string encode_kv_event_batch(const KvEventBatch& batch, Encoding encoding = {});

// A bytes-mode block hash for `key`: 32 bytes whose last 8, big-endian,
// are the key (so it decodes to `key`, kv_events.h).
std::string hash_bytes(BlockHash key);

class FakeVllmPublisher {
public:
    explicit FakeVllmPublisher(std::string topic = "kv-events", std::size_t buffer_steps = 10'000);
    ~FakeVllmPublisher();
    FakeVllmPublisher(const FakeVllmPublisher&) = delete;
    FakeVllmPublisher& operator=(const FakeVllmPublisher&) = delete;

    std::string endpoint() const;        // tcp://127.0.0.1:PORT of the PUB socket
    std::string replay_endpoint() const; // tcp://127.0.0.1:PORT of the ROUTER socket
    const std::string& topic() const;

    void set_encoding(Encoding encoding);
    void set_replay_layout(ReplayLayout layout);

    // Each takes the next sequence number and returns it.
    std::uint64_t publish(const KvEventBatch& batch);        // sent and buffered for replay
    std::uint64_t publish_payload(const std::string& bytes); // any bytes as the payload (hostile input)
    std::uint64_t withhold(const KvEventBatch& batch);       // buffered, never sent: a gap replay can fill
    void skip(std::uint64_t count = 1);                      // neither sent nor buffered: a gap it cannot
    void forget_replay_before(std::uint64_t seq);            // the buffer drops what is older
    void restart();                                          // sequence back to 0, buffer emptied

    std::uint64_t next_seq() const;
    std::uint64_t replay_requests() const; // requests answered so far

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

} // namespace kvscope::attach::testing
