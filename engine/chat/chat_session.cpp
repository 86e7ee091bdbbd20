#include "engine/chat/chat_session.h"

#include <algorithm>
#include <limits>

namespace kvscope {
namespace {

// What a session kept as text gives its Conversation: no ids (its prompts
// are rendered whole), so nothing is tokenized twice.
const TurnEncoder& text_only() {
    static const TurnEncoder encoder{
        .opening = [](const std::optional<std::string>&, const std::string&) { return std::vector<TokenId>{}; },
        .after_reply = [](std::span<const TokenId>, const std::string&) { return std::vector<TokenId>{}; },
        .reply = [](const std::string&) { return std::vector<TokenId>{}; },
        .whole = {},
    };
    return encoder;
}

std::string plural(std::size_t n, const char* word) {
    return std::to_string(n) + " " + word + (n == 1 ? "" : "s");
}

std::uint32_t as_u32(std::size_t n) {
    return static_cast<std::uint32_t>(std::min<std::size_t>(n, std::numeric_limits<std::uint32_t>::max()));
}

} // namespace

NoRoomForReply::NoRoomForReply(std::size_t prompt_tokens, std::size_t context)
    : Error("the message is too long for the model's context: it takes " + plural(prompt_tokens, "token") +
            " (with the system prompt and the chat template's markers) and the context holds " +
            plural(context, "token") + ", which leaves no room for a reply; send a shorter message"),
      prompt_tokens_(prompt_tokens), context_(context) {}

// The app's words (ui/chat), kept as they were: "messages" even for one.
std::string dropped_messages_note(std::uint32_t dropped_messages) {
    if (dropped_messages == 0)
        return {};
    return "The conversation outgrew the model's context: its oldest " + std::to_string(dropped_messages) +
           " messages were left out (the system prompt stays).";
}

std::string reply_limit_note(std::uint32_t reply_limit) {
    if (reply_limit == 0)
        return {};
    return "The reply was limited to " + std::to_string(reply_limit) +
           " tokens: all the room the context had left.";
}

std::string context_note(std::uint32_t dropped_messages, std::uint32_t reply_limit) {
    const std::string dropped = dropped_messages_note(dropped_messages);
    const std::string limited = reply_limit_note(reply_limit);
    return dropped.empty() || limited.empty() ? dropped + limited : dropped + " " + limited;
}

std::string context_note(const TurnPlan& plan) { return context_note(plan.dropped_messages, plan.reply_limit); }

ChatSession::ChatSession(TurnEncoder encoder, std::size_t context, std::optional<std::string> system)
    : encoder_(std::move(encoder)), context_(context), conversation_(std::move(system)) {}

bool ChatSession::is_history(std::span<const ChatMessage> messages) {
    const std::size_t first = !messages.empty() && messages.front().role == "system" ? 1 : 0;
    const std::span<const ChatMessage> turns = messages.subspan(first);
    if (turns.size() % 2 != 0)
        return false;
    for (std::size_t i = 0; i < turns.size(); ++i)
        if (turns[i].role != (i % 2 == 0 ? "user" : "assistant"))
            return false;
    return true;
}

ChatSession ChatSession::from_messages(std::span<const ChatMessage> messages, TurnEncoder encoder,
                                       std::size_t context) {
    if (!is_history(messages))
        throw Error("a chat's history is an optional system message, then user and assistant messages in turn, "
                    "ending with an assistant message");
    ChatSession s(std::move(encoder), context);
    s.conversation_ = Conversation::from_messages(messages, s.encoder_);
    return s;
}

ChatSession ChatSession::of_history(std::span<const ChatMessage> messages, TurnEncoder encoder, std::size_t context) {
    if (!encoder.whole)
        throw Error("a chat kept as text needs an encoder that renders whole conversations (TurnEncoder::whole)");
    ChatSession s = from_messages(messages, text_only(), context);
    s.encoder_ = std::move(encoder);
    s.rendered_ = true;
    return s;
}

const TurnEncoder& ChatSession::pieces() const { return rendered_ ? text_only() : encoder_; }

std::vector<TokenId> ChatSession::prompt_of(const Conversation& c) const {
    if (!rendered_)
        return c.tokens();
    const std::vector<ChatMessage> messages = c.messages();
    return encoder_.whole(messages);
}

TurnPlan ChatSession::plan_turn(std::string user_text, std::uint32_t max_new_tokens) {
    if (max_new_tokens == 0 && context_ == 0)
        throw Error("a reply as long as the context allows needs a context length: give max_new_tokens");
    const std::size_t need = max_new_tokens > 0 ? max_new_tokens : 1; // at least one token of reply
    const auto fits = [&](const std::vector<TokenId>& prompt) {
        return context_ == 0 || prompt.size() + need <= context_;
    };

    Conversation next = conversation_; // the session changes only once the turn is planned
    next.add_user(std::move(user_text), pieces());
    std::vector<TokenId> prompt = prompt_of(next);
    std::size_t dropped = 0;
    if (!fits(prompt) && next.exchanges() > 1) {
        // The fewest oldest exchanges to leave out: a prompt only shrinks as
        // more go, so a binary search finds what dropping them one by one
        // would (each try re-encodes one conversation, not one per exchange).
        const auto without = [&](std::size_t n) {
            Conversation c = next;
            c.drop_oldest(n, pieces());
            return c;
        };
        std::size_t lo = 1;
        std::size_t hi = next.exchanges() - 1; // all but the newest: taken when nothing less fits
        while (lo < hi) {
            const std::size_t mid = lo + (hi - lo) / 2;
            if (fits(prompt_of(without(mid))))
                hi = mid;
            else
                lo = mid + 1;
        }
        next.drop_oldest(lo, pieces());
        prompt = prompt_of(next);
        dropped = lo;
    }
    if (context_ > 0 && prompt.size() >= context_)
        throw NoRoomForReply(prompt.size(), context_);

    TurnPlan plan;
    plan.max_new_tokens = max_new_tokens;
    plan.dropped_messages = as_u32(2 * dropped); // each exchange left out had its reply
    if (context_ > 0) {
        const std::uint32_t room = as_u32(context_ - prompt.size());
        if (max_new_tokens == 0) {
            plan.max_new_tokens = room;
        } else if (max_new_tokens > room) {
            plan.max_new_tokens = room;
            plan.reply_limit = room;
        }
    }
    plan.prompt = std::move(prompt);
    conversation_ = std::move(next);
    return plan;
}

void ChatSession::add_reply(std::vector<TokenId> ids, std::string text) {
    conversation_.add_reply(std::move(ids), std::move(text));
}

void ChatSession::drop_last() { conversation_.drop_last(); }

void ChatSession::reset() { conversation_.reset(); }

void ChatSession::set_system(std::optional<std::string> system) {
    conversation_.set_system(std::move(system), pieces());
}

} // namespace kvscope
