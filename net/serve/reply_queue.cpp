#include "net/serve/reply_queue.h"

namespace kvscope::serve {

void ReplyQueue::begin_reply() {
    std::lock_guard lock(mutex_);
    ended_ = streaming_ = false;
}

bool ReplyQueue::mark_streaming() {
    std::lock_guard lock(mutex_);
    const bool was = streaming_;
    streaming_ = true;
    return !was;
}

bool ReplyQueue::streaming() const {
    std::lock_guard lock(mutex_);
    return streaming_;
}

bool ReplyQueue::push(std::string bytes, bool last, bool bounded) {
    std::lock_guard lock(mutex_);
    // Refused once the client is a whole bound behind, not for one piece
    // larger than the bound: a large pool's /kv/stream snapshot is several
    // MiB, and the feed sends it only when the last one has left.
    if (bounded && unsent_ >= max_unsent_)
        return false;
    unsent_ += bytes.size();
    out_.push_back(std::move(bytes));
    ended_ = ended_ || last;
    return true;
}

std::vector<std::string_view> ReplyQueue::front(std::size_t max) const {
    std::lock_guard lock(mutex_);
    std::vector<std::string_view> pieces;
    for (std::size_t i = 0; i < out_.size() && i < max; ++i)
        pieces.emplace_back(out_[i]);
    return pieces;
}

bool ReplyQueue::pop(std::size_t n) {
    std::lock_guard lock(mutex_);
    for (; n > 0; --n) {
        unsent_ -= out_.front().size();
        out_.pop_front();
    }
    return out_.empty() && ended_;
}

std::size_t ReplyQueue::unsent() const {
    std::lock_guard lock(mutex_);
    return unsent_;
}

bool ReplyQueue::ended() const {
    std::lock_guard lock(mutex_);
    return ended_;
}

} // namespace kvscope::serve
