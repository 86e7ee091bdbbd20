#include "engine/chat/turn_encoder.h"

#include <algorithm>
#include <string_view>

#include "engine/core/error.h"
#include "engine/tokenizer/chat_template.h"
#include "engine/tokenizer/tokenizer.h"

namespace kvscope {
namespace {

// Stands for a reply in a rendered conversation: the text after it is what
// the template writes after any reply.
constexpr std::string_view kReplyMark = "<kvscope reply>";

std::string text_after_reply(const ChatTemplate& chat, const std::string& user) {
    const std::vector<ChatMessage> messages{{"user", ""}, {"assistant", std::string(kReplyMark)}, {"user", user}};
    const std::string rendered = chat.render(messages);
    const std::size_t mark = rendered.find(kReplyMark);
    if (mark == std::string::npos)
        throw Error("the chat template (" + chat.description() + ") leaves out the assistant's replies, so a "
                    "conversation cannot go on from them");
    return rendered.substr(mark + kReplyMark.size());
}

// Text in the middle of a conversation: no BOS, and no SentencePiece
// dummy-prefix space, which only the start of a text gets.
std::vector<TokenId> encode_within(const ChatTemplate& chat, const Tokenizer& tokenizer, std::string_view text) {
    return tokenizer.encode(text, {.add_special = false, .parse_special = chat.supported(), .continues_text = true});
}

// The template ends a reply with an end-of-turn token the model may have
// sampled already: then the ids up to the template's come from the reply.
void drop_turn_end(std::vector<TokenId>& ids, std::span<const TokenId> reply, const Tokenizer& tokenizer) {
    if (reply.empty() || !tokenizer.is_stop_token(reply.back()))
        return;
    const auto end = std::find(ids.begin(), ids.end(), reply.back());
    if (end != ids.end())
        ids.erase(ids.begin(), end + 1);
}

} // namespace

TurnEncoder TurnEncoder::through(const ChatTemplate& chat, const Tokenizer& tokenizer) {
    return {
        .opening =
            [&chat, &tokenizer](const std::optional<std::string>& system, const std::string& user) {
                std::vector<ChatMessage> messages;
                if (system)
                    messages.push_back({"system", *system});
                messages.push_back({"user", user});
                return chat.encode(tokenizer, chat.render(messages));
            },
        .after_reply =
            [&chat, &tokenizer](std::span<const TokenId> sampled, const std::string& user) {
                std::vector<TokenId> ids = encode_within(chat, tokenizer, text_after_reply(chat, user));
                drop_turn_end(ids, sampled, tokenizer);
                return ids;
            },
        .reply = [&chat, &tokenizer](const std::string& text) { return encode_within(chat, tokenizer, text); },
        .whole =
            [&chat, &tokenizer](std::span<const ChatMessage> messages) {
                ChatRenderOptions options;
                options.add_generation_prompt = true; // the reply is the model's to write
                return chat.encode(tokenizer, chat.render(messages, options));
            },
    };
}

} // namespace kvscope
