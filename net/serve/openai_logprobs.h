// net/serve: token log-probabilities (engine/runtime/sampler.h's
// PositionLogprobs) in OpenAI's two shapes, as vLLM writes them:
//   completions (legacy): {"tokens": [...], "token_logprobs": [...],
//     "top_logprobs": [{token: logprob}, ...], "text_offset": [...]}
//   chat: {"content": [{"token", "logprob", "bytes", "top_logprobs":
//     [{"token", "logprob", "bytes"}, ...]}, ...]}
// A log-probability of -inf is written -9999.0, as OpenAI and vLLM do
// (JSON has no infinity).
#pragma once

#include <cstddef>
#include <span>
#include <string>

#include <nlohmann/json.hpp>

#include "engine/runtime/sampler.h"
#include "engine/tokenizer/tokenizer.h"

namespace kvscope::serve {

// How a response names tokens.
struct TokenWriter {
    const Tokenizer* tokenizer = nullptr;
    bool as_ids = false; // "token_id:N" (vLLM's return_tokens_as_token_ids)

    // The token as "token" shows it: "token_id:N", or its text (the piece
    // it adds, a leading space kept, control tokens by name such as "<s>",
    // bytes that are not a whole character as U+FFFD).
    std::string name(TokenId id) const;
    // The characters (Unicode code points) of its text, whichever way it is
    // named: what it moves text_offset by.
    std::size_t characters(TokenId id) const;
    // Its raw bytes, the piece it adds to the text (chat's "bytes": the
    // bytes of one character may be split over tokens).
    nlohmann::ordered_json bytes(TokenId id) const;
};

// One token of a choice and its log-probabilities; null for a token that
// has none (an echoed prompt's first).
struct LoggedToken {
    TokenId token = 0;
    const PositionLogprobs* logprobs = nullptr;
};

// The legacy completions object for `tokens`. "top_logprobs" holds the
// top-N alternatives and the token itself (N + 1 entries when it is not
// among them); "text_offset" counts characters from `offset`, the
// characters of the choice's tokens before these, and moves it past them.
nlohmann::ordered_json completion_logprobs(std::span<const LoggedToken> tokens, const TokenWriter& writer,
                                           std::size_t& offset);

// Chat's {"content": [...]}; a token without log-probabilities has only
// "token" and "bytes".
nlohmann::ordered_json chat_logprobs(std::span<const LoggedToken> tokens, const TokenWriter& writer);

} // namespace kvscope::serve
