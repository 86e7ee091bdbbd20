// net/serve: one reply's bytes on their way to the socket. The route's
// worker thread pushes; the connection's strand writes them in order.
// Bounded for streams: once the unsent bytes reach the bound, the next
// piece is refused (the client reads too slowly: the route then aborts its
// request), so a stream holds at most the bound and one piece. Thread-safe.
#pragma once

#include <cstddef>
#include <deque>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace kvscope::serve {

class ReplyQueue {
public:
    explicit ReplyQueue(std::size_t max_unsent) : max_unsent_(max_unsent) {}

    // A new reply: nothing queued, not streaming, its end not queued.
    void begin_reply();
    // The reply is a stream (its pieces are bounded); false if it already was.
    bool mark_streaming();
    bool streaming() const;

    // Queues `bytes` (`last`: the reply's end). A bounded piece is refused,
    // returning false, when the unsent bytes already reach the bound.
    bool push(std::string bytes, bool last, bool bounded = false);
    // The bytes queued, oldest first, at most `max` pieces (written with
    // one call); each stays valid until pop() takes it.
    std::vector<std::string_view> front(std::size_t max) const;
    // The `n` oldest pieces were written; true when they ended the reply.
    bool pop(std::size_t n);

    std::size_t unsent() const;
    // The reply's end is queued (or written).
    bool ended() const;

private:
    const std::size_t max_unsent_;
    mutable std::mutex mutex_;
    std::deque<std::string> out_; // a deque: the front stays put while others are pushed
    std::size_t unsent_ = 0;
    bool ended_ = false;
    bool streaming_ = false;
};

} // namespace kvscope::serve
