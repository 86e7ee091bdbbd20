// engine/chat: a conversation kept as token ids within the model's context
// (README.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "engine/chat/turn_encoder.h"
#include "engine/tokenizer/chat_template.h"

namespace kvscope {

// A conversation as the model reads it: each exchange is the template's ids
// leading to the reply, then the reply's ids as they were sampled. The
// prompt of turn N+1 is therefore exactly turn N's prompt, its reply and the
// new turn's ids, and the prefix cache serves everything before the new
// turn from the blocks turn N left. Each call that encodes takes the
// encoder, which may be rebuilt between calls (a new engine, same model).
class Conversation {
public:
    // `system`: a system message, first in every prompt and never dropped.
    explicit Conversation(std::optional<std::string> system = std::nullopt);
    // A conversation known only as text (from another model or engine):
    // [system,] user, assistant, ..., with an optional unanswered user
    // message last; its replies are encoded from their text, once.
    static Conversation from_messages(std::span<const ChatMessage> messages, const TurnEncoder& encoder);

    // The next user message, after the reply to the previous one. Throws
    // kvscope::Error when that reply has not come.
    void add_user(std::string text, const TurnEncoder& encoder);
    // The reply to the last user message: its ids as sampled (with the
    // end-of-turn token that ended it, if one did), its text and, apart,
    // its reasoning (ChatMessage::reasoning, for a template that reads it).
    void add_reply(std::vector<TokenId> ids, std::string text, std::string reasoning = {});
    // Forgets the last user message (one that could not be answered).
    void drop_last();
    // Back to the system message alone.
    void reset();
    // A new system message: only the first exchange's ids change.
    void set_system(std::optional<std::string> system, const TurnEncoder& encoder);

    const std::optional<std::string>& system() const { return system_; }
    // The messages it holds, as text: system first, user and assistant in turn.
    std::vector<ChatMessage> messages() const;

    // The ids it holds, the next prompt: each exchange's lead and its reply.
    // What fits the context is ChatSession's policy (chat_session.h).
    std::vector<TokenId> tokens() const;
    // How many exchanges (a user message and the reply to it, if it came) it holds.
    std::size_t exchanges() const { return exchanges_.size(); }
    // Forgets the oldest `n` exchanges, for good, keeping the newest one
    // whatever `n` says; the next one opens the conversation.
    void drop_oldest(std::size_t n, const TurnEncoder& encoder);

private:
    struct Exchange {
        std::string user;
        std::vector<TokenId> lead; // the ids before the reply: the opening, or what follows the previous reply
        std::optional<std::vector<TokenId>> reply;
        std::string reply_text;
        std::string reply_reasoning;
    };

    std::optional<std::string> system_;
    std::vector<Exchange> exchanges_;
};

} // namespace kvscope
