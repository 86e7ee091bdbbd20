#include "net/serve/openai_logprobs.h"

#include <algorithm>

namespace kvscope::serve {

namespace {

using ojson = nlohmann::ordered_json;

constexpr float kLowestLogprob = -9999.0f; // OpenAI's (and vLLM's) stand-in for -inf

float clamped(float logprob) { return std::max(logprob, kLowestLogprob); }

// Every character of the text as the tokenizer writes it, leading space and
// control tokens' names included.
constexpr DecodeOptions kTokenText{.keep_leading_space = true, .render_special = true};

std::string token_text(const Tokenizer& t, TokenId id) { return t.decode(std::span(&id, 1), kTokenText); }

} // namespace

std::string TokenWriter::name(TokenId id) const {
    return as_ids ? "token_id:" + std::to_string(id) : token_text(*tokenizer, id);
}

std::size_t TokenWriter::characters(TokenId id) const {
    const std::string text = token_text(*tokenizer, id); // valid UTF-8: count the bytes that start a character
    return static_cast<std::size_t>(
        std::count_if(text.begin(), text.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
}

ojson TokenWriter::bytes(TokenId id) const {
    ojson out = ojson::array();
    for (char c : tokenizer->token_piece(id, true))
        out.push_back(static_cast<unsigned char>(c));
    return out;
}

ojson completion_logprobs(std::span<const LoggedToken> tokens, const TokenWriter& writer, std::size_t& offset) {
    ojson names = ojson::array(), logprobs = ojson::array(), tops = ojson::array(), offsets = ojson::array();
    for (const LoggedToken& t : tokens) {
        names.push_back(writer.name(t.token));
        offsets.push_back(offset);
        offset += writer.characters(t.token);
        if (!t.logprobs) {
            logprobs.push_back(nullptr);
            tops.push_back(nullptr);
            continue;
        }
        logprobs.push_back(clamped(t.logprobs->chosen.logprob));
        ojson top = ojson::object();
        for (const TokenLogprob& alt : t.logprobs->top)
            top[writer.name(alt.token)] = clamped(alt.logprob);
        const std::string chosen = writer.name(t.token);
        if (!top.contains(chosen))
            top[chosen] = clamped(t.logprobs->chosen.logprob);
        tops.push_back(std::move(top));
    }
    return {{"tokens", std::move(names)},
            {"token_logprobs", std::move(logprobs)},
            {"top_logprobs", std::move(tops)},
            {"text_offset", std::move(offsets)}};
}

ojson chat_logprobs(std::span<const LoggedToken> tokens, const TokenWriter& writer) {
    ojson content = ojson::array();
    for (const LoggedToken& t : tokens) {
        ojson entry = {{"token", writer.name(t.token)}};
        if (t.logprobs)
            entry["logprob"] = clamped(t.logprobs->chosen.logprob);
        entry["bytes"] = writer.bytes(t.token);
        if (t.logprobs) {
            ojson top = ojson::array();
            for (const TokenLogprob& alt : t.logprobs->top)
                top.push_back({{"token", writer.name(alt.token)},
                               {"logprob", clamped(alt.logprob)},
                               {"bytes", writer.bytes(alt.token)}});
            entry["top_logprobs"] = std::move(top);
        }
        content.push_back(std::move(entry));
    }
    return {{"content", std::move(content)}};
}

} // namespace kvscope::serve
