// engine/chat: a conversation kept within the model's context (README.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "engine/kv/kv_ids.h"
#include "engine/tokenizer/chat_template.h"

namespace kvscope {

class Conversation {
public:
    // Messages rendered and tokenized as the model will read them.
    using Encode = std::function<std::vector<TokenId>(std::span<const ChatMessage>)>;
    // Encode through a chat template (both must outlive the function).
    static Encode through(const ChatTemplate& chat, const Tokenizer& tokenizer);

    // `system`: a system message, first in every prompt and never dropped.
    explicit Conversation(std::optional<std::string> system = std::nullopt);

    void add(ChatMessage message);
    // Forgets the last message (a user message that could not be answered).
    void drop_last();
    // Back to the system message alone.
    void reset();
    const std::vector<ChatMessage>& messages() const { return messages_; }

    // The prompt for the next reply: while it and `reply_tokens` exceed
    // `context` (0: no limit), the oldest exchange after the system message
    // is forgotten first, for good. The newest message is never dropped, so
    // the prompt returned may still not fit: the caller checks.
    std::vector<TokenId> prompt_within(std::size_t context, std::uint32_t reply_tokens, const Encode& encode);

private:
    std::vector<ChatMessage> messages_;
    std::size_t kept_ = 0; // leading messages never dropped: the system message
};

} // namespace kvscope
