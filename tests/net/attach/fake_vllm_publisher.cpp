// tests/attach: the in-test vLLM publisher (fake_vllm_publisher.h).
#include "fake_vllm_publisher.h"

#include <atomic>
#include <deque>
#include <functional>
#include <iterator>
#include <mutex>
#include <thread>
#include <vector>

#include <msgpack.hpp>
#include <zmq.hpp>
#include <zmq_addon.hpp>

namespace kvscope::attach::testing {
namespace {

using Packer = msgpack::packer<msgpack::sbuffer>;
using Write = std::function<void(Packer&)>;

// One struct field as msgspec sees it: `write` empty is None.
struct Field {
    std::string_view name;
    bool has_default; // declared "= None": omitted when None
    Write write;
};

void pack_str(Packer& p, std::string_view s) {
    p.pack_str(static_cast<std::uint32_t>(s.size()));
    p.pack_str_body(s.data(), static_cast<std::uint32_t>(s.size()));
}

void pack_hash(Packer& p, BlockHash h, HashShape shape) {
    if (shape == HashShape::Int) {
        p.pack_uint64(h);
        return;
    }
    const std::string bytes = hash_bytes(h);
    p.pack_bin(static_cast<std::uint32_t>(bytes.size()));
    p.pack_bin_body(bytes.data(), static_cast<std::uint32_t>(bytes.size()));
}

Write hashes_writer(const std::vector<BlockHash>& hashes, HashShape shape) {
    return [&hashes, shape](Packer& p) {
        p.pack_array(static_cast<std::uint32_t>(hashes.size()));
        for (BlockHash h : hashes)
            pack_hash(p, h, shape);
    };
}

template <typename T>
Write optional_writer(const std::optional<T>& value) {
    if (!value)
        return {};
    return [&value](Packer& p) {
        if constexpr (std::is_same_v<T, std::string>)
            pack_str(p, *value);
        else
            p.pack(*value);
    };
}

void write_or_nil(Packer& p, const Write& write) {
    if (write)
        write(p);
    else
        p.pack_nil();
}

// Arrays: the tag, then every field up to the last one written (a None
// before it is nil). Maps: "type", then every field except defaulted Nones.
void pack_event(Packer& p, std::string_view tag, const std::vector<Field>& fields, EventShape shape) {
    if (shape == EventShape::TaggedArray) {
        std::size_t n = fields.size();
        while (n > 0 && fields[n - 1].has_default && !fields[n - 1].write)
            --n;
        p.pack_array(static_cast<std::uint32_t>(n + 1));
        pack_str(p, tag);
        for (std::size_t i = 0; i < n; ++i)
            write_or_nil(p, fields[i].write);
        return;
    }
    std::vector<const Field*> kept;
    for (const Field& f : fields)
        if (f.write || !f.has_default)
            kept.push_back(&f);
    p.pack_map(static_cast<std::uint32_t>(kept.size() + 1));
    pack_str(p, "type");
    pack_str(p, tag);
    for (const Field* f : kept) {
        pack_str(p, f->name);
        write_or_nil(p, f->write);
    }
}

void pack_stored(Packer& p, const BlockStored& e, const Encoding& enc) {
    const std::optional<std::string> no_string;
    const std::vector<Field> fields{
        {"block_hashes", false, hashes_writer(e.hashes, enc.hashes)},
        {"parent_block_hash", false, e.parent ? Write([&](Packer& q) { pack_hash(q, *e.parent, enc.hashes); }) : Write{}},
        {"token_ids", false, [&](Packer& q) {
             q.pack_array(static_cast<std::uint32_t>(e.tokens));
             for (std::uint64_t t = 0; t < e.tokens; ++t)
                 q.pack_uint64(t % 32000);
         }},
        {"block_size", false, [&](Packer& q) { q.pack_uint32(e.block_size); }},
        {"lora_id", false, {}},
        {"medium", false, optional_writer(e.medium)},
        {"lora_name", false, optional_writer(e.lora_name)},
        {"extra_keys", true, {}},
        {"group_idx", true, optional_writer(e.group_idx)},
        {"kv_cache_spec_kind", true, optional_writer(e.kv_cache_spec_kind)},
        {"kv_cache_spec_sliding_window", true, optional_writer(e.kv_cache_spec_sliding_window)},
    };
    pack_event(p, "BlockStored", fields, enc.events);
}

void pack_removed(Packer& p, const BlockRemoved& e, const Encoding& enc) {
    const std::vector<Field> fields{
        {"block_hashes", false, hashes_writer(e.hashes, enc.hashes)},
        {"medium", false, optional_writer(e.medium)},
        {"group_idx", true, optional_writer(e.group_idx)},
    };
    pack_event(p, "BlockRemoved", fields, enc.events);
}

void pack_events(Packer& p, const KvEventBatch& batch, const Encoding& enc) {
    p.pack_array(static_cast<std::uint32_t>(batch.events.size() + batch.unknown_types.size()));
    for (const KvEvent& event : batch.events) {
        if (const auto* s = std::get_if<BlockStored>(&event))
            pack_stored(p, *s, enc);
        else if (const auto* r = std::get_if<BlockRemoved>(&event))
            pack_removed(p, *r, enc);
        else
            pack_event(p, "AllBlocksCleared", {}, enc.events);
    }
    for (const std::string& type : batch.unknown_types)
        pack_event(p, type, {{"x", false, [](Packer& q) { q.pack_uint32(1); }}}, enc.events);
}

std::string seq_bytes(std::uint64_t seq) {
    std::string s(8, '\0');
    for (int i = 7; i >= 0; --i, seq >>= 8)
        s[static_cast<std::size_t>(i)] = static_cast<char>(seq & 0xff);
    return s;
}

constexpr std::uint64_t kEndSeq = ~std::uint64_t{0};

std::string bound_endpoint(zmq::socket_t& socket) {
    socket.set(zmq::sockopt::linger, 0);
    socket.bind("tcp://127.0.0.1:*");
    return socket.get(zmq::sockopt::last_endpoint);
}

} // namespace

std::string encode_kv_event_batch(const KvEventBatch& batch, Encoding enc) {
    msgpack::sbuffer buffer;
    Packer p(buffer);
    const bool has_rank = batch.data_parallel_rank.has_value();
    if (enc.batch == BatchShape::Array) {
        p.pack_array(has_rank ? 3 : 2);
        p.pack_double(batch.ts);
        pack_events(p, batch, enc);
        if (has_rank)
            p.pack_int64(*batch.data_parallel_rank);
    } else {
        p.pack_map(has_rank ? 3 : 2);
        pack_str(p, "ts");
        p.pack_double(batch.ts);
        pack_str(p, "events");
        pack_events(p, batch, enc);
        if (has_rank) {
            pack_str(p, "data_parallel_rank");
            p.pack_int64(*batch.data_parallel_rank);
        }
    }
    return {buffer.data(), buffer.size()};
}

std::string hash_bytes(BlockHash key) {
    std::string digest(32, '\x5a'); // any leading 24 bytes: only the last 8 make the key
    const std::string tail = seq_bytes(key);
    digest.replace(24, 8, tail);
    return digest;
}

struct FakeVllmPublisher::Impl {
    Impl(std::string t, std::size_t steps)
        : topic(std::move(t)), buffer_steps(steps), pub(context, zmq::socket_type::pub),
          router(context, zmq::socket_type::router) {
        pub_endpoint = bound_endpoint(pub);
        router_endpoint = bound_endpoint(router);
    }

    std::uint64_t take_seq(const std::string& payload, bool send);
    void serve_replays();
    void answer(const std::vector<zmq::message_t>& request);

    const std::string topic;
    const std::size_t buffer_steps;
    zmq::context_t context;
    zmq::socket_t pub;    // caller's thread
    zmq::socket_t router; // the replay thread
    std::string pub_endpoint, router_endpoint;

    mutable std::mutex mutex; // guards what follows
    Encoding encoding;
    ReplayLayout layout = ReplayLayout::V026;
    std::uint64_t next = 0;
    std::deque<std::pair<std::uint64_t, std::string>> buffer; // (seq, payload), oldest first
    std::uint64_t replays = 0;

    std::atomic<bool> stop{false};
    std::thread thread;
};

std::uint64_t FakeVllmPublisher::Impl::take_seq(const std::string& payload, bool send) {
    std::lock_guard lock(mutex);
    const std::uint64_t seq = next++;
    if (send) {
        const std::string seq_frame = seq_bytes(seq);
        pub.send(zmq::buffer(topic), zmq::send_flags::sndmore);
        pub.send(zmq::buffer(seq_frame), zmq::send_flags::sndmore);
        pub.send(zmq::buffer(payload), zmq::send_flags::none);
    }
    buffer.emplace_back(seq, payload);
    if (buffer.size() > buffer_steps)
        buffer.pop_front();
    return seq;
}

void FakeVllmPublisher::Impl::serve_replays() {
    while (!stop.load()) {
        zmq::pollitem_t item{router.handle(), 0, ZMQ_POLLIN, 0};
        if (zmq::poll(&item, 1, std::chrono::milliseconds(20)) <= 0)
            continue;
        std::vector<zmq::message_t> request;
        (void)zmq::recv_multipart(router, std::back_inserter(request), zmq::recv_flags::dontwait);
        if (request.size() == 3 && request[2].size() == 8) // [identity, "", start_seq], as vLLM checks
            answer(request);
    }
}

// Every buffered batch from start_seq on, then the end marker, in the layout chosen.
void FakeVllmPublisher::Impl::answer(const std::vector<zmq::message_t>& request) {
    const auto* b = static_cast<const unsigned char*>(request[2].data());
    std::uint64_t start = 0;
    for (int i = 0; i < 8; ++i)
        start = (start << 8) | b[i];
    std::lock_guard lock(mutex);
    const auto reply = [&](std::uint64_t seq, const std::string& payload) {
        const std::string seq_frame = seq_bytes(seq);
        router.send(zmq::buffer(request[0].data(), request[0].size()), zmq::send_flags::sndmore);
        router.send(zmq::message_t(), zmq::send_flags::sndmore);
        if (layout == ReplayLayout::V026)
            router.send(zmq::buffer(seq == kEndSeq ? std::string() : topic), zmq::send_flags::sndmore);
        router.send(zmq::buffer(seq_frame), zmq::send_flags::sndmore);
        router.send(zmq::buffer(payload), zmq::send_flags::none);
    };
    for (const auto& [seq, payload] : buffer)
        if (seq >= start)
            reply(seq, payload);
    reply(kEndSeq, "");
    ++replays;
}

FakeVllmPublisher::FakeVllmPublisher(std::string topic, std::size_t buffer_steps)
    : impl_(std::make_unique<Impl>(std::move(topic), buffer_steps)) {
    impl_->thread = std::thread([impl = impl_.get()] { impl->serve_replays(); });
}

FakeVllmPublisher::~FakeVllmPublisher() {
    impl_->stop.store(true);
    impl_->thread.join();
}

std::string FakeVllmPublisher::endpoint() const { return impl_->pub_endpoint; }
std::string FakeVllmPublisher::replay_endpoint() const { return impl_->router_endpoint; }
const std::string& FakeVllmPublisher::topic() const { return impl_->topic; }

void FakeVllmPublisher::set_encoding(Encoding encoding) {
    std::lock_guard lock(impl_->mutex);
    impl_->encoding = encoding;
}

void FakeVllmPublisher::set_replay_layout(ReplayLayout layout) {
    std::lock_guard lock(impl_->mutex);
    impl_->layout = layout;
}

std::uint64_t FakeVllmPublisher::publish(const KvEventBatch& batch) {
    Encoding enc;
    {
        std::lock_guard lock(impl_->mutex);
        enc = impl_->encoding;
    }
    return impl_->take_seq(encode_kv_event_batch(batch, enc), true);
}

std::uint64_t FakeVllmPublisher::publish_payload(const std::string& bytes) {
    return impl_->take_seq(bytes, true);
}

std::uint64_t FakeVllmPublisher::withhold(const KvEventBatch& batch) {
    Encoding enc;
    {
        std::lock_guard lock(impl_->mutex);
        enc = impl_->encoding;
    }
    return impl_->take_seq(encode_kv_event_batch(batch, enc), false);
}

void FakeVllmPublisher::skip(std::uint64_t count) {
    std::lock_guard lock(impl_->mutex);
    impl_->next += count;
}

void FakeVllmPublisher::forget_replay_before(std::uint64_t seq) {
    std::lock_guard lock(impl_->mutex);
    while (!impl_->buffer.empty() && impl_->buffer.front().first < seq)
        impl_->buffer.pop_front();
}

void FakeVllmPublisher::restart() {
    std::lock_guard lock(impl_->mutex);
    impl_->next = 0;
    impl_->buffer.clear();
}

std::uint64_t FakeVllmPublisher::next_seq() const {
    std::lock_guard lock(impl_->mutex);
    return impl_->next;
}

std::uint64_t FakeVllmPublisher::replay_requests() const {
    std::lock_guard lock(impl_->mutex);
    return impl_->replays;
}

} // namespace kvscope::attach::testing
