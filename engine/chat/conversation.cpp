#include "engine/chat/conversation.h"

#include <algorithm>

#include "engine/core/error.h"

namespace kvscope {

Conversation::Conversation(std::optional<std::string> system) : system_(std::move(system)) {}

Conversation Conversation::from_messages(std::span<const ChatMessage> messages, const TurnEncoder& encoder) {
    const bool has_system = !messages.empty() && messages.front().role == "system";
    Conversation c(has_system ? std::optional(messages.front().content) : std::nullopt);
    for (const ChatMessage& m : messages.subspan(has_system ? 1 : 0)) {
        if (m.role == "assistant")
            c.add_reply(encoder.reply(m.content), m.content, m.reasoning);
        else
            c.add_user(m.content, encoder);
    }
    return c;
}

void Conversation::add_user(std::string text, const TurnEncoder& encoder) {
    Exchange next{std::move(text), {}, std::nullopt, {}, {}};
    if (exchanges_.empty()) {
        next.lead = encoder.opening(system_, next.user);
    } else if (exchanges_.back().reply) {
        next.lead = encoder.after_reply(*exchanges_.back().reply, next.user);
    } else {
        throw Error("a conversation takes a user message after the reply to the previous one");
    }
    exchanges_.push_back(std::move(next));
}

void Conversation::add_reply(std::vector<TokenId> ids, std::string text, std::string reasoning) {
    if (exchanges_.empty() || exchanges_.back().reply)
        throw Error("a conversation takes a reply after a user message");
    exchanges_.back().reply = std::move(ids);
    exchanges_.back().reply_text = std::move(text);
    exchanges_.back().reply_reasoning = std::move(reasoning);
}

void Conversation::drop_last() {
    if (!exchanges_.empty() && !exchanges_.back().reply)
        exchanges_.pop_back();
}

void Conversation::reset() { exchanges_.clear(); }

void Conversation::set_system(std::optional<std::string> system, const TurnEncoder& encoder) {
    system_ = std::move(system);
    if (!exchanges_.empty())
        exchanges_.front().lead = encoder.opening(system_, exchanges_.front().user);
}

std::vector<ChatMessage> Conversation::messages() const {
    std::vector<ChatMessage> out;
    if (system_)
        out.push_back({"system", *system_});
    for (const Exchange& e : exchanges_) {
        out.push_back({"user", e.user});
        if (e.reply)
            out.push_back({"assistant", e.reply_text, e.reply_reasoning});
    }
    return out;
}

std::vector<TokenId> Conversation::tokens() const {
    std::vector<TokenId> ids;
    for (const Exchange& e : exchanges_) {
        ids.insert(ids.end(), e.lead.begin(), e.lead.end());
        if (e.reply)
            ids.insert(ids.end(), e.reply->begin(), e.reply->end());
    }
    return ids;
}

void Conversation::drop_oldest(std::size_t n, const TurnEncoder& encoder) {
    n = std::min(n, exchanges_.empty() ? 0 : exchanges_.size() - 1);
    if (n == 0)
        return;
    exchanges_.erase(exchanges_.begin(), exchanges_.begin() + static_cast<std::ptrdiff_t>(n));
    exchanges_.front().lead = encoder.opening(system_, exchanges_.front().user);
}

} // namespace kvscope
