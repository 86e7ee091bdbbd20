// app/serve: what the engine produced -> OpenAI response bodies and
// server-sent-event streams, for /v1/completions ("text_completion") and
// /v1/chat/completions ("chat.completion" / "chat.completion.chunk").
// No HTTP here: the server writes the strings these return.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "app/serve/openai_request.h"
#include "engine/engine.h"

namespace kvscope::serve {

// OpenAI's words: "stop", "length"; "abort" as vLLM says for a request that
// was aborted (client gone, server draining). Error never reaches a
// response: a request that fails before its first token answers with an
// ApiError, one that fails later ends its stream with an error event.
std::string_view finish_reason_word(FinishReason reason);

struct Usage {
    std::uint32_t prompt_tokens = 0;
    std::uint32_t completion_tokens = 0; // over all n samples
    nlohmann::ordered_json to_json() const; // {prompt_tokens, completion_tokens, total_tokens}
};

// Identity shared by every chunk of one response.
struct ResponseHeader {
    Api api = Api::Completions;
    std::string id;         // "cmpl-..." or "chatcmpl-..."
    std::string model;
    std::int64_t created = 0; // Unix seconds
};

// "data: <json>\n\n", and the stream's last event.
std::string sse_event(const nlohmann::ordered_json& chunk);
inline constexpr std::string_view kSseDone = "data: [DONE]\n\n";

// A streamed response, event by event. Chat sends each sample's role first
// (begin), then content deltas, then a chunk with its finish reason; with
// include_usage one chunk with `choices: []` and the usage, then [DONE].
class ResponseStream {
public:
    ResponseStream(ResponseHeader header, std::uint32_t n, bool include_usage, std::uint32_t prompt_tokens);

    std::string begin();                              // chat: role chunks; completions: ""
    std::string on_output(const RequestOutput& out);  // text delta and/or finish chunk(s); "" when nothing to send
    std::string end();                                // usage chunk (when asked) and [DONE]
    const Usage& usage() const { return usage_; }

private:
    ResponseHeader header_;
    std::uint32_t n_;
    bool include_usage_;
    Usage usage_;
};

// A whole (non-streamed) response, collected output by output.
class ResponseCollector {
public:
    ResponseCollector(ResponseHeader header, std::uint32_t n, std::uint32_t prompt_tokens);

    void on_output(const RequestOutput& out);
    bool done() const; // every sample has its finish reason
    nlohmann::ordered_json to_json() const; // choices by index, usage
    const Usage& usage() const { return usage_; }

private:
    struct Choice {
        std::string text;
        std::optional<FinishReason> finish;
    };
    ResponseHeader header_;
    std::vector<Choice> choices_;
    Usage usage_;
};

// A fresh response id: prefix + random hex ("cmpl-3f9a...").
std::string new_response_id(Api api);

} // namespace kvscope::serve
