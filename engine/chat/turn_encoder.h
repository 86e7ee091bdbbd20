// engine/chat: how a conversation's turns become token ids (README.md).
#pragma once

#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "engine/kv/kv_ids.h"

namespace kvscope {

class ChatTemplate;
class Tokenizer;
struct ChatMessage;

// A conversation encoded piece by piece, so that each reply stays the ids
// the model sampled: re-tokenizing its text would give other ids (on a
// synthetic model ~9x as many), and the prefix cache could not reuse the
// blocks the earlier turns left. The model's chat template (through()), or
// a test's stand-in.
struct TurnEncoder {
    // A conversation's first exchange up to its reply: the system message
    // (if any) and the user message, ending with the assistant header.
    std::function<std::vector<TokenId>(const std::optional<std::string>& system, const std::string& user)> opening;
    // What follows a reply sampled as `reply`: the end of the assistant turn
    // (unless the reply's last token already ended it), the next user
    // message and the assistant header.
    std::function<std::vector<TokenId>(std::span<const TokenId> reply, const std::string& user)> after_reply;
    // A reply known only as text (a conversation carried over from another
    // model or engine): ids as close to the model's as text can give.
    std::function<std::vector<TokenId>(const std::string& text)> reply;
    // A whole conversation known only as text ([system,] user, assistant,
    // ..., user), rendered by the template at once and encoded, ending with
    // the assistant header: the ids a client that sends its history as text
    // gets (/v1/chat/completions). Only ChatSession::of_history needs it.
    std::function<std::vector<TokenId>(std::span<const ChatMessage> messages)> whole;

    // Through the model's chat template (both must outlive the encoder).
    static TurnEncoder through(const ChatTemplate& chat, const Tokenizer& tokenizer);
};

} // namespace kvscope
