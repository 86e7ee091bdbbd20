// engine/chat: one chat and its context policy, the same in every front end
// (the app, `kvscope-cli chat`, /v1/chat/completions; README.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "engine/chat/conversation.h"
#include "engine/chat/turn_encoder.h"
#include "engine/core/error.h"
#include "engine/tokenizer/chat_template.h"

namespace kvscope {

// What a turn sends to the engine, and what the policy did to fit it.
struct TurnPlan {
    std::vector<TokenId> prompt;        // the kept conversation and the new message, up to the assistant header
    std::uint32_t max_new_tokens = 0;   // the reply's limit: as asked, or the room the context has left
    std::uint32_t dropped_messages = 0; // the oldest messages left out this turn, for good (the system prompt stays)
    std::uint32_t reply_limit = 0;      // = max_new_tokens when that is less than asked; 0: not limited
};

// The turn's newest message (with the system prompt and the template's
// turn) fills the whole context: no room for even one reply token.
class NoRoomForReply : public Error {
public:
    NoRoomForReply(std::size_t prompt_tokens, std::size_t context);
    std::size_t prompt_tokens() const { return prompt_tokens_; } // the prompt with nothing older left in it
    std::size_t context() const { return context_; }

private:
    std::size_t prompt_tokens_;
    std::size_t context_;
};

// What a front end tells the user about a plan, in these words everywhere;
// each is empty when its count is 0.
//   "The conversation outgrew the model's context: its oldest N messages
//    were left out (the system prompt stays)."
//   "The reply was limited to N tokens: all the room the context had left."
std::string dropped_messages_note(std::uint32_t dropped_messages);
std::string reply_limit_note(std::uint32_t reply_limit);
// Both sentences that apply, joined by a space; empty when nothing was
// dropped or limited.
std::string context_note(const TurnPlan& plan);
std::string context_note(std::uint32_t dropped_messages, std::uint32_t reply_limit);

// A chat: its conversation (Conversation: token ids, each reply as it was
// sampled, so the prefix cache serves the earlier turns) and the context
// policy every front end applies to a new turn:
//   1. while the prompt and max_new_tokens exceed the context, the oldest
//      exchange (a user message and its reply) is left out, for good; the
//      system prompt and the newest message stay;
//   2. when the prompt still leaves less room than max_new_tokens, the
//      reply is limited to the room left (TurnPlan::reply_limit);
//   3. only when the newest message alone fills the context (no room for
//      one reply token) is the turn refused: NoRoomForReply.
// Not thread-safe; copyable.
class ChatSession {
public:
    // `encoder`: TurnEncoder::through(template, tokenizer), which must
    // outlive the session (or set_encoder's next one). `context`: the
    // model's context length in tokens; 0: no limit.
    ChatSession(TurnEncoder encoder, std::size_t context, std::optional<std::string> system = std::nullopt);

    // Whether `messages` are a history the factories below take: an optional
    // system message first, then user and assistant messages in turn,
    // ending with an assistant one (or no exchange at all).
    static bool is_history(std::span<const ChatMessage> messages);
    // A chat known only as text (the app's, when another model was loaded):
    // replies are encoded from their text once (TurnEncoder::reply), turns
    // from then on are token-exact. Throws kvscope::Error unless
    // is_history(messages).
    static ChatSession from_messages(std::span<const ChatMessage> messages, TurnEncoder encoder,
                                     std::size_t context);
    // A stateless client's history (/v1/chat/completions): kept as text,
    // and every prompt is the kept messages rendered whole
    // (TurnEncoder::whole), the ids the template gives the text at once.
    // Throws kvscope::Error unless is_history(messages) and encoder.whole.
    static ChatSession of_history(std::span<const ChatMessage> messages, TurnEncoder encoder, std::size_t context);

    // The next user message, fitted to the context by the policy above; the
    // message joins the conversation and the plan says what to send.
    // `max_new_tokens`: the reply's limit asked for; 0: all the room the
    // context leaves (never "limited"; needs a context). Throws
    // NoRoomForReply when the message alone fills the context, and
    // kvscope::Error when the last reply has not come (add_reply) or
    // max_new_tokens and the context are both 0; the session is then as it was.
    TurnPlan plan_turn(std::string user_text, std::uint32_t max_new_tokens);
    // The reply to the planned turn: its ids as sampled (with the end-of-turn
    // token that ended it, if one did) and its text. Throws kvscope::Error
    // without a planned turn to answer.
    void add_reply(std::vector<TokenId> ids, std::string text);
    // Forgets the planned turn's user message (a turn that failed never
    // happened); what the plan dropped stays dropped. Nothing without one.
    void drop_last();
    // Back to the system message alone.
    void reset();

    // A new system message (nullopt: none); the next turn's prompt carries it.
    void set_system(std::optional<std::string> system);
    const std::optional<std::string>& system() const { return conversation_.system(); }
    // A new encoder for the same model (an engine rebuilt: its tokenizer).
    void set_encoder(TurnEncoder encoder) { encoder_ = std::move(encoder); }
    std::size_t context() const { return context_; }
    // The messages it holds, as text: system first, user and assistant in turn.
    std::vector<ChatMessage> messages() const { return conversation_.messages(); }

private:
    const TurnEncoder& pieces() const;
    std::vector<TokenId> prompt_of(const Conversation& c) const;

    TurnEncoder encoder_;
    std::size_t context_;
    bool rendered_ = false; // of_history: prompts rendered whole from the text
    Conversation conversation_;
};

} // namespace kvscope
