// net/serve: OpenAI request bodies -> what the engine runs. Parsing and every
// check a request must pass before it reaches the engine live here, with no
// HTTP: the server hands in the body text, gets a GenerationRequest or an
// ApiError (400/404/413) whose message says what is wrong.
//
// Fields follow OpenAI's API as vLLM and llama.cpp's server accept it.
// Unknown fields are ignored (clients send many); a known field of the
// wrong type or out of range is an error naming it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "net/serve/api_error.h"
#include "engine/chat/reasoning_split.h"
#include "engine/engine.h"
#include "engine/tokenizer/chat_template.h"

namespace kvscope::serve {

// The documented limits (README, "Serving"): past them a request is refused
// with 400 (413 for the body), never cut short.
//   body        8 MiB of JSON (a 128k-token prompt as ids is under 1 MiB)
//   n           1..128 samples (kMaxSamplesPerRequest: the engine's own cap)
//   stop        at most 16 strings of at most 1024 bytes each
//   prompt + max_tokens   at most ServedModel::max_model_len tokens
struct RequestLimits {
    std::size_t max_body_bytes = 8u << 20;       // 413 beyond
    std::uint32_t max_n = kMaxSamplesPerRequest; // samples per request
    std::size_t max_stop_strings = 16;
    std::size_t max_stop_bytes = 1024;           // each
};

// What the server serves: its name for the model and what a request is
// checked against.
struct ServedModel {
    std::string name;              // --served-model-name, else the file's stem
    std::uint32_t max_model_len = 0; // the model's context: prompt + max_tokens fit in it
    std::uint32_t n_ctx_train = 0;   // the context it was trained with (GET /v1/models' meta)
    const Tokenizer* tokenizer = nullptr;
    const ChatTemplate* chat_template = nullptr; // unsupported(): chat answers 400
};

enum class Api : std::uint8_t { Completions, Chat };

// Completions' `echo`: the prompt in front of each choice's text (and its
// tokens in front of the choice's log-probabilities).
enum class Echo : std::uint8_t {
    None,
    PromptAndCompletion,
    // max_tokens 0: the prompt alone. The engine still samples one token
    // (params.max_new_tokens is 1, as vLLM does); the response shows none
    // of it, though usage counts it.
    PromptOnly,
};

// One request, ready for Engine::add_request.
struct GenerationRequest {
    Api api = Api::Completions;
    std::string model;          // as the client named it (checked against ServedModel::name)
    std::vector<TokenId> prompt; // ids: the client's, or its text/messages encoded
    RequestParams params;       // sampling, n, max_new_tokens, stop strings, ignore_eos, logprobs
    bool stream = false;
    bool include_usage = false; // stream_options.include_usage
    // Chat: what the context policy (engine/chat's ChatSession) did to fit
    // the conversation: its oldest messages left out, the reply limited to
    // the room left. Both 0 when everything fit (the response then says nothing).
    std::uint32_t dropped_messages = 0;
    std::uint32_t reply_limit = 0;
    // Chat: how the reply carries its reasoning (the template's format, and
    // whether the prompt opened it), for reasoning_content.
    ReasoningMode reasoning;
    Echo echo = Echo::None;
    std::string prompt_text;    // with echo: the prompt as the client wrote it (its ids decoded when it sent ids)
    bool tokens_as_ids = false; // return_tokens_as_token_ids: tokens named "token_id:N"
};

// The body as JSON. Throws ApiError: 413 past limits.max_body_bytes, 400 for
// invalid UTF-8 or malformed JSON or a body that is not an object.
nlohmann::json parse_body(std::string_view body, const RequestLimits& limits = {});

// POST /v1/completions. `prompt`: a string (encoded as `kvscope-cli generate
// --prompt` does: BOS where the vocabulary asks for it), an array of token
// ids (ids outside the vocabulary are refused), or a one-element array of
// either. max_tokens defaults to 16 (OpenAI's default); prompt + max_tokens
// must fit in max_model_len. temperature defaults to 1 (OpenAI's); without
// a seed each request draws one, so equal requests may differ.
// Log-probabilities: `logprobs` N (0..kMaxLogprobs) gives each generated
// token's with its N most likely alternatives; `echo` puts the prompt in
// front (its tokens' log-probabilities too with `logprobs`, the first
// token's null), and with it max_tokens may be 0 (Echo::PromptOnly);
// `return_tokens_as_token_ids` names tokens "token_id:N". All of the
// model's raw distribution, before temperature and penalties.
GenerationRequest parse_completion_request(const nlohmann::json& body, const ServedModel& model,
                                           const RequestLimits& limits = {});

// POST /v1/chat/completions. `messages`: role + content, content a string or
// an array of {"type":"text","text":...} parts, rendered by the model's chat
// template; an assistant message's `reasoning_content` (or vLLM's
// `reasoning`), a string, goes to the template as ChatMessage::reasoning; 400 pointing at /v1/completions when the model has no template
// kvscope can render. max_tokens (or max_completion_tokens) defaults to the
// rest of the context. A conversation ([system,] user, assistant, ...,
// user) gets the context policy every kvscope chat has (ChatSession): while
// the prompt and max_tokens exceed max_model_len its oldest exchanges are
// left out (the system message stays), then the reply is limited to the
// room left (dropped_messages, reply_limit); only a last message that alone
// fills the context answers 400. Other message lists (ending with an
// assistant message, two users in a row) are rendered as they are, and
// prompt + max_tokens past max_model_len answers 400. `logprobs: true` gives
// each generated token's log-probability, `top_logprobs` N (0..kMaxLogprobs,
// only with logprobs) its N most likely alternatives.
// Template arguments (ChatRenderOptions), as vLLM takes them:
// `chat_template_kwargs` {"enable_thinking": bool (Qwen3, SmolLM3),
// "reasoning_effort": "low"|"medium"|"high" (gpt-oss), "date_string": text
// (Llama 3.1+)}, a null entry leaving the template's default; OpenAI's
// top-level `reasoning_effort` is the same argument (both given: they must
// agree). Any other key answers 400, as it would not reach the template.
GenerationRequest parse_chat_request(const nlohmann::json& body, const ServedModel& model,
                                     const RequestLimits& limits = {});

// POST /tokenize: {"prompt": text} (or {"messages": [...]} with
// `chat_template_kwargs`, rendered as for chat) -> the ids. POST /detokenize: {"tokens": [ids]} -> the text.
std::vector<TokenId> parse_tokenize_request(const nlohmann::json& body, const ServedModel& model);
std::vector<TokenId> parse_detokenize_request(const nlohmann::json& body, const ServedModel& model);

} // namespace kvscope::serve
