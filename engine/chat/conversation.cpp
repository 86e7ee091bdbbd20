#include "engine/chat/conversation.h"

#include "engine/tokenizer/tokenizer.h"

namespace kvscope {

Conversation::Encode Conversation::through(const ChatTemplate& chat, const Tokenizer& tokenizer) {
    return [&chat, &tokenizer](std::span<const ChatMessage> messages) {
        return chat.encode(tokenizer, chat.render(messages));
    };
}

Conversation::Conversation(std::optional<std::string> system) {
    if (system)
        messages_.push_back({"system", std::move(*system)});
    kept_ = messages_.size();
}

void Conversation::add(ChatMessage message) { messages_.push_back(std::move(message)); }

void Conversation::drop_last() {
    if (messages_.size() > kept_)
        messages_.pop_back();
}

void Conversation::reset() { messages_.resize(kept_); }

std::vector<TokenId> Conversation::prompt_within(std::size_t context, std::uint32_t reply_tokens,
                                                 const Encode& encode) {
    for (;;) {
        std::vector<TokenId> prompt = encode(messages_);
        // An exchange can go while one remains in front of the newest message.
        const bool can_drop = messages_.size() >= kept_ + 3;
        if (context == 0 || prompt.size() + reply_tokens <= context || !can_drop)
            return prompt;
        const auto oldest = messages_.begin() + static_cast<std::ptrdiff_t>(kept_);
        messages_.erase(oldest, oldest + 2);
    }
}

} // namespace kvscope
