// net/serve: what the engine produced -> OpenAI response bodies and
// server-sent-event streams, for /v1/completions ("text_completion") and
// /v1/chat/completions ("chat.completion" / "chat.completion.chunk").
// No HTTP here: the server writes the strings these return.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "net/serve/openai_logprobs.h"
#include "net/serve/openai_request.h"
#include "engine/engine.h"
#include "engine/service/engine_service.h"

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
    // GenerationRequest's: what the context policy did to a chat. When
    // either is non-zero the body (and a stream's first chunk) carries a
    // non-standard top-level object saying so:
    //   "kvscope_context": {"dropped_messages": N, "reply_limit": M, "note": engine/chat's context_note}
    std::uint32_t dropped_messages = 0;
    std::uint32_t reply_limit = 0;
};

// What each choice shows besides its generated text, as the request asked.
struct ChoiceContent {
    bool logprobs = false;  // each token's log-probabilities ("logprobs": null without)
    TokenWriter tokens;     // how they name tokens
    Echo echo = Echo::None; // completions: the prompt in front of the text and of the tokens
    std::string prompt_text;
    std::vector<TokenId> prompt;
    // Chat: the reply's reasoning goes apart, as `reasoning_content`
    // (ReasoningFormat::none: all of it is content, as for completions).
    ReasoningMode reasoning;
};

// `request`'s, read before its prompt is moved to the engine.
ChoiceContent choice_content(const GenerationRequest& request, const Tokenizer& tokenizer);

// That object, or null when nothing was dropped or limited.
nlohmann::ordered_json context_json(const ResponseHeader& header);

// "data: <json>\n\n", and the stream's last event.
std::string sse_event(const nlohmann::ordered_json& chunk);
inline constexpr std::string_view kSseDone = "data: [DONE]\n\n";

// What a FinishReason::Error output becomes: 400 (invalid_request_error)
// when the request failed before any token (the engine refused it, e.g.
// larger than the whole KV pool), 500 (internal_server_error) after.
ApiError engine_error(const RequestOutput& out, bool any_token);

// What a request the engine service would not take becomes: 400
// (invalid_request_error) for the engine's refusal (it can never run),
// 503 for a busy or draining service.
ApiError service_error(const ServiceRefusal& refusal);

// A streamed response, event by event. Chat sends each sample's role first
// (begin), then deltas, then a chunk with its finish reason; with
// include_usage one chunk with `choices: []` and the usage, then [DONE].
// The first chunk carries "kvscope_context" when the header has one.
// completion_tokens counts what the engine sampled (RequestOutput::tokens,
// the stop token included, as vLLM counts). With log-probabilities each
// delta carries its tokens' (one is sent for tokens whose text is not out
// yet, such as the stop token's); an echo comes with a sample's first token.
// A chat delta carries `content`, or with ChoiceContent::reasoning its text
// split as vLLM and llama.cpp stream it: `reasoning_content` for the
// reasoning, `content` for the answer, each only when it has text (a delta
// with neither, carrying log-probabilities only, has an empty `content`).
// Text that may be a marker cut between two tokens waits for the next
// output, and the sample's last output sends what waited.
class ResponseStream {
public:
    ResponseStream(ResponseHeader header, std::uint32_t n, bool include_usage, std::uint32_t prompt_tokens,
                   ChoiceContent content = {});

    std::string begin();                              // chat: role chunks; completions: ""
    // Text delta and/or finish chunk; "" when nothing to send. The first
    // FinishReason::Error output becomes one `data: {"error": {...}}` event
    // (engine_error); later outputs send nothing.
    std::string on_output(const RequestOutput& out);
    std::string end();                                // usage chunk (when asked) and [DONE]
    const Usage& usage() const { return usage_; }
    bool failed() const { return failed_; }

private:
    struct ChoiceState {
        bool started = false;    // its first token (and an echo) went out
        std::size_t offset = 0;  // text_offset of its next token
        ReasoningSplitter split; // chat: its text into reasoning and content
    };
    nlohmann::ordered_json chunk(nlohmann::ordered_json choices);
    nlohmann::ordered_json choice(std::uint32_t index, const ReasoningText& text, std::optional<FinishReason> finish) const;
    std::string delta(const RequestOutput& out);

    ResponseHeader header_;
    std::uint32_t n_;
    bool include_usage_;
    Usage usage_;
    ChoiceContent content_;
    std::vector<ChoiceState> states_;
    bool failed_ = false;
    bool chunk_sent_ = false; // the first one carries kvscope_context
};

// A whole (non-streamed) response, collected output by output. A chat
// message has `content`, and with ChoiceContent::reasoning its reasoning
// apart as `reasoning_content` when there was any.
class ResponseCollector {
public:
    ResponseCollector(ResponseHeader header, std::uint32_t n, std::uint32_t prompt_tokens, ChoiceContent content = {});

    void on_output(const RequestOutput& out);
    // Every sample has its finish reason, or one failed: the server then
    // answers error() with its status (and aborts what is left).
    bool done() const;
    const std::optional<ApiError>& error() const { return error_; } // the first FinishReason::Error, as engine_error
    nlohmann::ordered_json to_json() const; // choices by index, usage (and kvscope_context)
    const Usage& usage() const { return usage_; }

private:
    struct Choice {
        std::string text;
        std::optional<FinishReason> finish;
        // With ChoiceContent::logprobs:
        std::vector<TokenId> tokens;
        std::vector<PositionLogprobs> logprobs, prompt_logprobs;
    };
    nlohmann::ordered_json logprobs_json(const Choice& c) const;

    ResponseHeader header_;
    ChoiceContent content_;
    std::vector<Choice> choices_;
    Usage usage_;
    std::optional<ApiError> error_;
};

// Bodies of the other routes.
// GET /v1/models: the one served model; `meta` as llama.cpp's server has it
// (n_vocab: clients drawing random token ids read it).
nlohmann::ordered_json models_response(const ServedModel& model, std::int64_t created);
// POST /tokenize (vLLM's): {"tokens", "count", "max_model_len"}.
nlohmann::ordered_json tokenize_response(std::span<const TokenId> tokens, const ServedModel& model);
// POST /detokenize: {"prompt": text}, the ids decoded as
// decode(encode(text)) == text wants.
nlohmann::ordered_json detokenize_response(std::span<const TokenId> tokens, const ServedModel& model);

// A fresh response id: prefix + random hex ("cmpl-3f9a...").
std::string new_response_id(Api api);

} // namespace kvscope::serve
