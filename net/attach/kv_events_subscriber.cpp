// net/attach: one vLLM rank's KV cache events over ZeroMQ
// (kv_events_subscriber.h).
#include "net/attach/kv_events_subscriber.h"

#include <atomic>
#include <deque>
#include <iterator>
#include <mutex>
#include <set>
#include <thread>

#include <zmq.hpp>
#include <zmq_addon.hpp>

#include "net/attach/kv_events.h"
#include "net/attach/prefix_cache_map.h"

namespace kvscope::attach {
namespace {

using Clock = std::chrono::steady_clock;

// One poll's wait: short, so that the destructor's stop is seen at once.
constexpr std::chrono::milliseconds kPollSlice{50};
constexpr std::size_t kMaxFaults = 64;             // kept until taken; older ones dropped
constexpr std::size_t kMaxReportedTypes = 16;      // unknown event types named once each
// A bigger frame is hostile (vLLM's batches are kilobytes to a few MB):
// libzmq drops the peer. Decoding holds ~24 bytes per payload byte at worst.
constexpr std::int64_t kMaxMessageBytes = 16 << 20;
constexpr std::uint64_t kEndSeq = ~std::uint64_t{0}; // vLLM's END_SEQ: (-1).to_bytes(8, "big", signed=True)

std::optional<std::uint64_t> read_seq(const zmq::message_t& frame) {
    if (frame.size() != 8)
        return std::nullopt;
    const auto* b = static_cast<const unsigned char*>(frame.data());
    std::uint64_t seq = 0;
    for (int i = 0; i < 8; ++i)
        seq = (seq << 8) | b[i];
    return seq;
}

std::string seq_bytes(std::uint64_t seq) {
    std::string s(8, '\0');
    for (int i = 7; i >= 0; --i, seq >>= 8)
        s[static_cast<std::size_t>(i)] = static_cast<char>(seq & 0xff);
    return s;
}

// "batch 41" or "batches 41-44": the half-open range [from, to).
std::string batches_text(std::uint64_t from, std::uint64_t to) {
    if (to - from == 1)
        return "batch " + std::to_string(from);
    return "batches " + std::to_string(from) + "-" + std::to_string(to - 1);
}

bool wait_readable(zmq::socket_t& socket, std::chrono::milliseconds timeout) {
    zmq::pollitem_t item{socket.handle(), 0, ZMQ_POLLIN, 0};
    try {
        return zmq::poll(&item, 1, timeout) > 0;
    } catch (const zmq::error_t&) { // EINTR: a signal; the caller polls again
        return false;
    }
}

std::vector<zmq::message_t> receive(zmq::socket_t& socket) {
    std::vector<zmq::message_t> frames;
    (void)zmq::recv_multipart(socket, std::back_inserter(frames), zmq::recv_flags::dontwait);
    return frames;
}

void harden(zmq::socket_t& socket) {
    socket.set(zmq::sockopt::linger, 0);
    socket.set(zmq::sockopt::maxmsgsize, kMaxMessageBytes);
}

} // namespace

struct KvEventsSubscriber::Impl {
    explicit Impl(KvEventsOptions o) : options(std::move(o)), map(options.max_blocks) {}

    void run_guarded();
    void run();
    void on_live(std::uint64_t seq, std::string_view payload);
    // Recovers [from, to) through the replay endpoint, or counts it lost.
    void fill_gap(std::uint64_t from, std::uint64_t to);
    // Reads replies until the end marker, `to` or the timeout; returns the
    // first sequence number not applied.
    std::uint64_t read_replay(zmq::socket_t& dealer, std::uint64_t from, std::uint64_t to, bool& ended);
    void apply(std::uint64_t seq, std::string_view payload, bool replayed);
    void lose(std::uint64_t from, std::uint64_t to, const std::string& why);
    void fault(const std::string& text);      // takes the lock
    void fault_locked(const std::string& text);

    const KvEventsOptions options;
    zmq::context_t context;
    std::optional<std::uint64_t> next_seq; // socket thread only: the sequence number expected next

    mutable std::mutex mutex; // guards what follows
    PrefixCacheMap map;
    std::uint64_t batches = 0, replayed = 0, lost = 0;
    std::optional<std::uint64_t> last_seq;
    std::optional<Clock::time_point> last_batch_at;
    std::uint64_t evicted_reported = 0;
    bool rank_mismatch_reported = false;
    std::set<std::string> reported_types;
    std::deque<std::string> faults;

    std::atomic<bool> stop{false};
    std::thread thread; // last: starts once the rest is built
};

void KvEventsSubscriber::Impl::fault_locked(const std::string& text) {
    if (faults.size() == kMaxFaults)
        faults.pop_front();
    faults.push_back("rank " + std::to_string(options.rank) + ": " + text);
}

void KvEventsSubscriber::Impl::fault(const std::string& text) {
    std::lock_guard lock(mutex);
    fault_locked(text);
}

// Nothing may escape the thread: a failure stops this rank's events and
// says why.
void KvEventsSubscriber::Impl::run_guarded() {
    try {
        run();
    } catch (const std::exception& e) {
        fault(std::string("events stopped: ") + e.what());
    }
}

void KvEventsSubscriber::Impl::run() {
    zmq::socket_t sub(context, zmq::socket_type::sub);
    try {
        harden(sub);
        sub.set(zmq::sockopt::subscribe, options.topic);
        sub.connect(options.endpoint);
    } catch (const zmq::error_t& e) {
        fault("cannot subscribe to " + options.endpoint + ": " + e.what());
        return;
    }
    while (!stop.load()) {
        if (!wait_readable(sub, kPollSlice))
            continue;
        const std::vector<zmq::message_t> frames = receive(sub);
        if (frames.empty())
            continue;
        const std::optional<std::uint64_t> seq = frames.size() == 3 ? read_seq(frames[1]) : std::nullopt;
        if (!seq) {
            fault("message of " + std::to_string(frames.size()) +
                  " frames skipped (expected topic, 8-byte sequence number, payload)");
            continue;
        }
        on_live(*seq, frames[2].to_string_view());
    }
}

void KvEventsSubscriber::Impl::on_live(std::uint64_t seq, std::string_view payload) {
    if (next_seq && seq < *next_seq) {
        std::lock_guard lock(mutex);
        map.forget_all();
        fault_locked("publisher restarted (sequence number fell from " + std::to_string(*next_seq - 1) + " to " +
                     std::to_string(seq) + "): map emptied, rebuilding from new events");
        next_seq = 0;
    }
    if (next_seq && seq > *next_seq)
        fill_gap(*next_seq, seq);
    apply(seq, payload, false);
    next_seq = seq + 1;
}

void KvEventsSubscriber::Impl::fill_gap(std::uint64_t from, std::uint64_t to) {
    if (!options.replay_endpoint) {
        lose(from, to, "no replay endpoint given");
        return;
    }
    zmq::socket_t dealer(context, zmq::socket_type::dealer); // one per gap: no stale reply can reach the next
    bool ended = false;
    std::uint64_t next = from;
    try {
        harden(dealer);
        dealer.connect(*options.replay_endpoint);
        const std::string start = seq_bytes(from);
        const bool sent = dealer.send(zmq::message_t(), zmq::send_flags::sndmore | zmq::send_flags::dontwait) &&
                          dealer.send(zmq::buffer(start), zmq::send_flags::dontwait);
        if (!sent) {
            lose(from, to, "the replay request to " + *options.replay_endpoint + " could not be queued");
            return;
        }
        next = read_replay(dealer, from, to, ended);
    } catch (const zmq::error_t& e) {
        lose(next, to, "replay from " + *options.replay_endpoint + " failed: " + e.what());
        return;
    }
    if (next < to)
        lose(next, to, ended ? "the replay ended before them" :
                               "the replay did not answer within " + std::to_string(options.replay_timeout.count()) + " ms");
}

std::uint64_t KvEventsSubscriber::Impl::read_replay(zmq::socket_t& dealer, std::uint64_t from, std::uint64_t to,
                                                     bool& ended) {
    const Clock::time_point deadline = Clock::now() + options.replay_timeout;
    std::uint64_t next = from;
    while (next < to && !stop.load() && Clock::now() < deadline) {
        if (!wait_readable(dealer, kPollSlice))
            continue;
        const std::vector<zmq::message_t> frames = receive(dealer);
        // After the empty delimiter: [seq, payload] (<= 0.25) or [topic, seq, payload] (>= 0.26).
        const bool shaped = (frames.size() == 3 || frames.size() == 4) && frames[0].size() == 0;
        const std::optional<std::uint64_t> seq = shaped ? read_seq(frames[frames.size() - 2]) : std::nullopt;
        if (!seq) {
            fault("replay reply of " + std::to_string(frames.size()) + " frames skipped");
            continue;
        }
        if (*seq == kEndSeq) {
            ended = true;
            break;
        }
        if (*seq < next || *seq >= to) // already had it, or the live socket brings it
            continue;
        if (*seq > next)
            lose(next, *seq, "the replay holds from " + std::to_string(*seq));
        apply(*seq, frames.back().to_string_view(), true);
        next = *seq + 1;
    }
    return next;
}

void KvEventsSubscriber::Impl::apply(std::uint64_t seq, std::string_view payload, bool was_replayed) {
    KvEventBatch batch;
    try {
        batch = decode_kv_event_batch(payload);
    } catch (const KvEventsError& e) {
        lose(seq, seq + 1, std::string("undecodable: ") + e.what());
        std::lock_guard lock(mutex);
        last_seq = seq;
        return;
    }
    std::lock_guard lock(mutex);
    map.apply(batch);
    ++batches;
    replayed += was_replayed ? 1 : 0;
    last_seq = seq;
    last_batch_at = Clock::now();
    if (map.evicted() > evicted_reported) {
        fault_locked(std::to_string(map.evicted() - evicted_reported) + " oldest blocks dropped to stay under " +
                     std::to_string(options.max_blocks) + " blocks");
        evicted_reported = map.evicted();
    }
    if (batch.data_parallel_rank && *batch.data_parallel_rank != options.rank && !rank_mismatch_reported) {
        fault_locked("batches say data_parallel_rank " + std::to_string(*batch.data_parallel_rank) +
                     ": is this endpoint given in rank order?");
        rank_mismatch_reported = true;
    }
    for (const std::string& type : batch.unknown_types)
        if (reported_types.size() < kMaxReportedTypes && reported_types.insert(type).second)
            fault_locked("unknown event type \"" + type + "\" ignored (a newer vLLM?)");
}

void KvEventsSubscriber::Impl::lose(std::uint64_t from, std::uint64_t to, const std::string& why) {
    std::lock_guard lock(mutex);
    lost += to - from;
    map.forget_all();
    fault_locked(batches_text(from, to) + " lost (" + why + "): map emptied, rebuilding from new events");
}

KvEventsSubscriber::KvEventsSubscriber(KvEventsOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {
    impl_->thread = std::thread([impl = impl_.get()] { impl->run_guarded(); });
}

KvEventsSubscriber::~KvEventsSubscriber() {
    impl_->stop.store(true);
    impl_->thread.join();
}

const KvEventsOptions& KvEventsSubscriber::options() const {
    return impl_->options;
}

PrefixCacheSample KvEventsSubscriber::sample() const {
    std::lock_guard lock(impl_->mutex);
    PrefixCacheSample s = impl_->map.sample();
    s.batches = impl_->batches;
    s.replayed = impl_->replayed;
    s.lost = impl_->lost;
    s.last_seq = impl_->last_seq;
    if (impl_->last_batch_at)
        s.age_s = std::chrono::duration<double>(Clock::now() - *impl_->last_batch_at).count();
    return s;
}

std::vector<std::string> KvEventsSubscriber::take_faults() {
    std::lock_guard lock(impl_->mutex);
    std::vector<std::string> taken(std::make_move_iterator(impl_->faults.begin()),
                                   std::make_move_iterator(impl_->faults.end()));
    impl_->faults.clear();
    return taken;
}

} // namespace kvscope::attach
