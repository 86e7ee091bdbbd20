#include "net/serve/openai_request.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <random>
#include <span>

#include "engine/chat/chat_session.h"
#include "engine/tokenizer/utf8.h"

namespace kvscope::serve {

namespace {

using json = nlohmann::json;

constexpr std::uint32_t kDefaultCompletionTokens = 16; // OpenAI's max_tokens default
constexpr float kDefaultTemperature = 1.0f;            // OpenAI's and vLLM's
constexpr std::int64_t kMaxUint32 = std::numeric_limits<std::uint32_t>::max();

ApiError bad(const std::string& message, const std::string& param) {
    return ApiError::invalid_request(message, param);
}

ApiError wrong_type(const char* name, const char* expected, const json& value) {
    return bad(std::string("'") + name + "' must be " + expected + ", got " + value.type_name(), name);
}

// The field, or nullptr when absent or null: clients send null for "the default".
const json* field(const json& body, const char* name) {
    const auto it = body.find(name);
    return it == body.end() || it->is_null() ? nullptr : &*it;
}

// 2 for 2.0, as people write bounds.
std::string number_text(double v) {
    return std::trunc(v) == v && std::abs(v) < 1e15 ? std::to_string(static_cast<std::int64_t>(v)) : json(v).dump();
}

// The number fields end up as floats: their largest is "no upper bound"
// (and larger ones would not convert).
constexpr double kUnbounded = std::numeric_limits<float>::max();

// [lo, hi], or (lo, hi] with lo_open.
struct Range {
    double lo;
    double hi = kUnbounded;
    bool lo_open = false;

    bool contains(double v) const { return (lo_open ? v > lo : v >= lo) && v <= hi; }
    std::string text() const {
        return "in " + std::string(lo_open ? "(" : "[") + number_text(lo) + ", " + number_text(hi) + "]";
    }
};

ApiError out_of_range(const char* name, const std::string& range, const json& value) {
    return bad(std::string("'") + name + "' must be " + range + ", got " + value.dump(), name);
}

std::optional<double> optional_number(const json& body, const char* name, const Range& range) {
    const json* v = field(body, name);
    if (!v)
        return std::nullopt;
    if (!v->is_number())
        throw wrong_type(name, "a number", *v);
    if (!range.contains(v->get<double>()))
        throw out_of_range(name, range.text(), *v);
    return v->get<double>();
}

// 16.0 is an integer too (Python clients send it), within double's exact integers.
bool is_integer(const json& v) {
    constexpr double kExact = 9007199254740992.0; // 2^53
    const double d = v.is_number_float() ? v.get<double>() : 0.0;
    return v.is_number_integer() || (v.is_number_float() && std::trunc(d) == d && std::abs(d) <= kExact);
}

// Of a value is_integer accepted.
std::int64_t integer_value(const json& v) {
    return v.is_number_float() ? static_cast<std::int64_t>(v.get<double>()) : v.get<std::int64_t>();
}

bool in_int_range(const json& v, std::int64_t lo, std::int64_t hi) {
    constexpr auto kMaxInt64 = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
    if (v.is_number_unsigned() && v.get<std::uint64_t>() > kMaxInt64)
        return false; // past every bound a field has
    const std::int64_t i = integer_value(v);
    return i >= lo && i <= hi;
}

std::optional<std::int64_t> optional_int(const json& body, const char* name, std::int64_t lo, std::int64_t hi) {
    const json* v = field(body, name);
    if (!v)
        return std::nullopt;
    if (!is_integer(*v))
        throw wrong_type(name, "an integer", *v);
    if (!in_int_range(*v, lo, hi))
        throw out_of_range(name, "in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]", *v);
    return integer_value(*v);
}

std::optional<bool> optional_bool(const json& body, const char* name) {
    const json* v = field(body, name);
    if (!v)
        return std::nullopt;
    if (!v->is_boolean())
        throw wrong_type(name, "a boolean", *v);
    return v->get<bool>();
}

std::optional<std::string> optional_string(const json& body, const char* name) {
    const json* v = field(body, name);
    if (!v)
        return std::nullopt;
    if (!v->is_string())
        throw wrong_type(name, "a string", *v);
    return v->get<std::string>();
}

std::string checked_model(const json& body, const ServedModel& model) {
    const std::optional<std::string> name = optional_string(body, "model");
    if (name && *name != model.name)
        throw ApiError::not_found("The model `" + *name + "` does not exist.", "model");
    return name.value_or(model.name);
}

std::vector<std::string> stop_strings(const json& body, const RequestLimits& limits) {
    const json* v = field(body, "stop");
    if (!v)
        return {};
    const json list = v->is_string() ? json::array({*v}) : *v;
    if (!list.is_array())
        throw wrong_type("stop", "a string or an array of strings", *v);
    if (list.size() > limits.max_stop_strings)
        throw bad("'stop' has " + std::to_string(list.size()) + " strings; at most " +
                      std::to_string(limits.max_stop_strings) + " are allowed", "stop");
    std::vector<std::string> stops;
    for (const json& s : list) {
        if (!s.is_string())
            throw wrong_type("stop", "a string or an array of strings", s);
        if (s.get_ref<const std::string&>().size() > limits.max_stop_bytes)
            throw bad("a 'stop' string is longer than " + std::to_string(limits.max_stop_bytes) + " bytes", "stop");
        stops.push_back(s.get<std::string>());
    }
    return stops;
}

std::uint64_t drawn_seed() {
    std::random_device device;
    return (std::uint64_t{device()} << 32) | device();
}

SamplingParams sampling_params(const json& body) {
    SamplingParams s;
    s.temperature = static_cast<float>(optional_number(body, "temperature", {0, 2}).value_or(kDefaultTemperature));
    s.top_p = static_cast<float>(optional_number(body, "top_p", {0, 1, true}).value_or(1.0));
    // -1 (vLLM) and 0 (llama.cpp) both mean off.
    const std::int64_t top_k = optional_int(body, "top_k", -1, kMaxUint32).value_or(0);
    s.top_k = top_k < 0 ? 0 : static_cast<std::uint32_t>(top_k);
    s.min_p = static_cast<float>(optional_number(body, "min_p", {0, 1}).value_or(0.0));
    s.repetition_penalty = static_cast<float>(
        optional_number(body, "repetition_penalty", {0, kUnbounded, true}).value_or(1.0));
    const std::optional<std::int64_t> seed = optional_int(body, "seed", 0, std::numeric_limits<std::int64_t>::max());
    s.seed = seed ? static_cast<std::uint64_t>(*seed) : drawn_seed();
    return s;
}

bool include_usage(const json& body) {
    const json* options = field(body, "stream_options");
    if (!options)
        return false;
    if (!options->is_object())
        throw wrong_type("stream_options", "an object", *options);
    const json* usage = field(*options, "include_usage");
    if (usage && !usage->is_boolean())
        throw wrong_type("stream_options.include_usage", "a boolean", *usage);
    return usage && usage->get<bool>();
}

// stream, stream_options.include_usage, n, stop, ignore_eos and sampling:
// what completions and chat share. max_tokens is the caller's.
GenerationRequest common_request(Api api, const json& body, const ServedModel& model, const RequestLimits& limits) {
    GenerationRequest r;
    r.api = api;
    r.model = checked_model(body, model);
    r.params.sampling = sampling_params(body);
    r.params.n = static_cast<std::uint32_t>(optional_int(body, "n", 1, limits.max_n).value_or(1));
    r.params.stop_strings = stop_strings(body, limits);
    r.params.ignore_eos = optional_bool(body, "ignore_eos").value_or(false);
    r.stream = optional_bool(body, "stream").value_or(false);
    r.include_usage = r.stream && include_usage(body);
    r.tokens_as_ids = optional_bool(body, "return_tokens_as_token_ids").value_or(false);
    return r;
}

std::optional<std::uint32_t> top_logprobs_field(const json& body, const char* name) {
    const auto v = optional_int(body, name, 0, kMaxLogprobs);
    return v ? std::optional(static_cast<std::uint32_t>(*v)) : std::nullopt;
}

TokenId checked_token(const json& id, const ServedModel& model, const char* param) {
    if (!id.is_number_integer())
        throw bad(std::string("'") + param + "' token ids must be integers, got " + id.type_name(), param);
    const std::int64_t v = id.get<std::int64_t>();
    if (v < 0 || v >= model.tokenizer->n_tokens())
        throw bad("token id " + id.dump() + " is outside the vocabulary [0, " +
                      std::to_string(model.tokenizer->n_tokens()) + ")", param);
    return static_cast<TokenId>(v);
}

std::vector<TokenId> checked_tokens(const json& ids, const ServedModel& model, const char* param) {
    std::vector<TokenId> out;
    out.reserve(ids.size());
    for (const json& id : ids)
        out.push_back(checked_token(id, model, param));
    return out;
}

// A string (encoded as `kvscope-cli generate --prompt` does) or token ids.
std::vector<TokenId> single_prompt(const json& prompt, const ServedModel& model) {
    if (prompt.is_string()) {
        if (prompt.get_ref<const std::string&>().empty())
            throw bad("the prompt is empty", "prompt");
        return model.tokenizer->encode(prompt.get<std::string>());
    }
    if (prompt.is_array() && !prompt.empty())
        return checked_tokens(prompt, model, "prompt");
    if (prompt.is_array())
        throw bad("the prompt is empty", "prompt");
    throw wrong_type("prompt", "a string or an array of token ids", prompt);
}

// OpenAI allows a batch of prompts ([["a"], ["b"]] or ["a", "b"]); kvscope
// takes one per request (n samples it), so a one-element batch is unwrapped.
const json& completion_prompt_field(const json& body) {
    const json* prompt = field(body, "prompt");
    if (!prompt)
        throw bad("'prompt' is required", "prompt");
    const bool batch =
        prompt->is_array() && !prompt->empty() && (prompt->front().is_string() || prompt->front().is_array());
    if (!batch)
        return *prompt;
    if (prompt->size() > 1)
        throw bad("kvscope takes one prompt per request, got " + std::to_string(prompt->size()) +
                      "; send one request per prompt", "prompt");
    return prompt->front();
}

// What echo shows: the prompt's text as sent, or its ids decoded.
std::string echoed_text(const json& prompt, std::span<const TokenId> ids, const ServedModel& model) {
    return prompt.is_string() ? prompt.get<std::string>() : model.tokenizer->decode(ids);
}

std::optional<std::uint32_t> max_tokens_field(const json& body, const char* name) {
    const auto v = optional_int(body, name, 1, kMaxUint32);
    return v ? std::optional(static_cast<std::uint32_t>(*v)) : std::nullopt;
}

// vLLM's words, so clients that parse them keep working.
// `input`: "prompt" or "messages"; `param`: the field that asked for max_tokens.
ApiError context_error(std::size_t prompt_tokens, std::uint32_t max_tokens, const ServedModel& model,
                       const char* input, const char* param) {
    const std::uint64_t total = prompt_tokens + std::uint64_t{max_tokens};
    return bad("This model's maximum context length is " + std::to_string(model.max_model_len) +
                   " tokens. However, you requested " + std::to_string(total) + " tokens (" +
                   std::to_string(prompt_tokens) + " in the " + input + ", " + std::to_string(max_tokens) +
                   " in the completion). Please reduce the length of the " + input + " or completion.",
               param);
}

void check_context(std::size_t prompt_tokens, std::uint32_t max_tokens, const ServedModel& model, const char* input,
                   const char* param) {
    if (prompt_tokens + std::uint64_t{max_tokens} > model.max_model_len)
        throw context_error(prompt_tokens, max_tokens, model, input, param);
}

std::string part_text(const json& part, std::size_t index) {
    const std::string where = "messages[" + std::to_string(index) + "].content";
    if (!part.is_object())
        throw bad(where + " parts must be objects, got " + part.type_name(), "messages");
    const json* type = field(part, "type");
    if (!type || !type->is_string() || *type != "text")
        throw bad(where + " has a part of type " + (type ? type->dump() : "null") +
                      "; kvscope takes text parts only", "messages");
    const json* text = field(part, "text");
    if (!text || !text->is_string())
        throw bad(where + " has a text part without a string 'text'", "messages");
    return text->get<std::string>();
}

std::string message_content(const json& message, const std::string& role, std::size_t index) {
    const json* content = field(message, "content");
    if (!content && role == "assistant")
        return {};
    if (content && content->is_string())
        return content->get<std::string>();
    if (content && content->is_array()) {
        std::string text;
        for (const json& part : *content)
            text += part_text(part, index);
        return text;
    }
    throw bad("messages[" + std::to_string(index) + "].content must be a string or an array of text parts, got " +
                  (content ? content->type_name() : "null"), "messages");
}

// An assistant message's reasoning as a client sends it back: llama.cpp's
// and vLLM's reasoning_content, or vLLM's newer `reasoning`.
std::string message_reasoning(const json& message, const std::string& role, std::size_t index) {
    for (const char* name : {"reasoning_content", "reasoning"}) {
        const json* reasoning = field(message, name);
        if (!reasoning)
            continue;
        if (role != "assistant" || !reasoning->is_string())
            throw bad("messages[" + std::to_string(index) + "]." + name + " must be a string in an assistant message",
                      "messages");
        return reasoning->get<std::string>();
    }
    return {};
}

ChatMessage chat_message(const json& message, std::size_t index) {
    const std::string where = "messages[" + std::to_string(index) + "]";
    if (!message.is_object())
        throw bad(where + " must be an object, got " + message.type_name(), "messages");
    const json* role = field(message, "role");
    if (!role || !role->is_string())
        throw bad(where + " needs a string 'role'", "messages");
    const std::string r = role->get<std::string>();
    if (r != "system" && r != "user" && r != "assistant")
        throw bad(where + " has role '" + r + "'; kvscope renders system, user and assistant messages", "messages");
    return {r, message_content(message, r, index), message_reasoning(message, r, index)};
}

std::vector<ChatMessage> chat_messages(const json& body) {
    const json* messages = field(body, "messages");
    if (!messages)
        throw bad("'messages' is required", "messages");
    if (!messages->is_array())
        throw wrong_type("messages", "an array", *messages);
    if (messages->empty())
        throw bad("'messages' is empty", "messages");
    std::vector<ChatMessage> out;
    for (std::size_t i = 0; i < messages->size(); ++i)
        out.push_back(chat_message((*messages)[i], i));
    return out;
}

void check_chat_template(const ServedModel& model) {
    if (!model.chat_template || !model.chat_template->supported())
        throw bad("The model `" + model.name + "` has no chat template kvscope can render; "
                  "send the conversation as text to /v1/completions instead", "messages");
}

// "low", "medium" or "high": gpt-oss's efforts, as OpenAI's API names them.
// `name`: the field as the message names it; `param`: the request field at fault.
std::string reasoning_effort(const json& value, const std::string& name, const std::string& param) {
    if (!value.is_string())
        throw bad("'" + name + "' must be a string, got " + value.type_name(), param);
    const std::string effort = value.get<std::string>();
    if (effort != "low" && effort != "medium" && effort != "high")
        throw bad("'" + name + "' must be \"low\", \"medium\" or \"high\", got " + value.dump(), param);
    return effort;
}

// One chat_template_kwargs entry into `options`. Only the template
// arguments ChatRenderOptions carries reach a template, so any other key is
// refused rather than silently left out. The param named is the object's.
void template_argument(ChatRenderOptions& options, const std::string& key, const json& value) {
    constexpr const char* kParam = "chat_template_kwargs";
    const std::string name = std::string(kParam) + "." + key;
    if (key == "enable_thinking") {
        if (!value.is_boolean())
            throw bad("'" + name + "' must be a boolean, got " + value.type_name(), kParam);
        options.enable_thinking = value.get<bool>();
    } else if (key == "reasoning_effort") {
        options.reasoning_effort = reasoning_effort(value, name, kParam);
    } else if (key == "date_string") {
        if (!value.is_string())
            throw bad("'" + name + "' must be a string, got " + value.type_name(), kParam);
        options.date = value.get<std::string>();
    } else {
        throw bad("'" + name + "' is not a template argument kvscope passes; it passes enable_thinking, "
                  "reasoning_effort and date_string", kParam);
    }
}

// The template's inputs a chat request sets: vLLM's chat_template_kwargs
// (an object; a null entry is the template's default) and OpenAI's
// top-level reasoning_effort, which must agree with the object's where both
// are given. The generation prompt is always added: the reply is the model's.
ChatRenderOptions render_options(const json& body) {
    ChatRenderOptions options;
    options.add_generation_prompt = true;
    if (const json* kwargs = field(body, "chat_template_kwargs")) {
        if (!kwargs->is_object())
            throw wrong_type("chat_template_kwargs", "an object", *kwargs);
        for (const auto& [key, value] : kwargs->items())
            if (!value.is_null())
                template_argument(options, key, value);
    }
    if (const json* effort = field(body, "reasoning_effort")) {
        const std::string top = reasoning_effort(*effort, "reasoning_effort", "reasoning_effort");
        if (!options.reasoning_effort.empty() && options.reasoning_effort != top)
            throw bad("'reasoning_effort' is \"" + top + "\" but 'chat_template_kwargs.reasoning_effort' is \"" +
                          options.reasoning_effort + "\"; send one", "reasoning_effort");
        options.reasoning_effort = top;
    }
    return options;
}

// The messages through the model's template, whole, ready to continue.
std::vector<TokenId> rendered_prompt(std::span<const ChatMessage> messages, const ServedModel& model,
                                     const ChatRenderOptions& options) {
    std::string rendered;
    try {
        rendered = model.chat_template->render(messages, options);
    } catch (const Error& e) {
        throw bad(e.what(), "messages");
    }
    return model.chat_template->encode(*model.tokenizer, rendered);
}

// The conversation through the model's template, ready to continue.
std::vector<TokenId> chat_prompt(const json& body, const ServedModel& model) {
    check_chat_template(model);
    return rendered_prompt(chat_messages(body), model, render_options(body));
}

// A conversation ending with the user's message, fitted to the context as
// every kvscope chat is (ChatSession): the history rendered whole as the
// template renders it (so a conversation that fits gets the same ids as
// rendered_prompt), its oldest exchanges left out while the prompt and
// `max_tokens` (0: the room left) exceed the context, then the reply
// limited to the room left.
void plan_chat(GenerationRequest& r, const std::vector<ChatMessage>& messages, std::uint32_t max_tokens,
               const ChatRenderOptions& options, const ServedModel& model, const char* param) {
    const auto history = std::span(messages).first(messages.size() - 1);
    // A session of_history renders every prompt whole (TurnEncoder::whole,
    // all it uses), here with the request's template arguments.
    TurnEncoder encoder;
    encoder.whole = [&model, &options](std::span<const ChatMessage> kept) {
        return rendered_prompt(kept, model, options);
    };
    ChatSession session = ChatSession::of_history(history, std::move(encoder), model.max_model_len);
    TurnPlan plan;
    try {
        plan = session.plan_turn(messages.back().content, max_tokens);
    } catch (const NoRoomForReply& e) {
        throw context_error(e.prompt_tokens(), std::max(max_tokens, 1u), model, "messages", param);
    } catch (const Error& e) { // the template refused the conversation
        throw bad(e.what(), "messages");
    }
    r.prompt = std::move(plan.prompt);
    r.params.max_new_tokens = plan.max_new_tokens;
    r.dropped_messages = plan.dropped_messages;
    r.reply_limit = plan.reply_limit;
}

// Checked before parsing, so the client reads "invalid UTF-8" rather than
// a parser's complaint about a string.
std::optional<std::size_t> first_invalid_utf8(std::string_view text) {
    for (std::size_t at = 0; at < text.size();) {
        const utf8::ScanResult r = utf8::scan(text.substr(at));
        if (r.kind != utf8::Scan::complete)
            return at;
        at += r.length;
    }
    return std::nullopt;
}

// "parse error at line 1, column 5: ..." without the "[json.exception.parse_error.101] " in front.
std::string parser_words(const json::parse_error& e) {
    const std::string what = e.what();
    const std::size_t end = what.find("] ");
    return end == std::string::npos ? what : what.substr(end + 2);
}

} // namespace

nlohmann::json parse_body(std::string_view body, const RequestLimits& limits) {
    if (body.size() > limits.max_body_bytes)
        throw ApiError::too_large("the request body has " + std::to_string(body.size()) + " bytes; at most " +
                                  std::to_string(limits.max_body_bytes) + " are allowed");
    if (const auto at = first_invalid_utf8(body))
        throw ApiError::invalid_request("invalid UTF-8 in the request body at byte " + std::to_string(*at));
    json parsed;
    try {
        parsed = json::parse(body);
    } catch (const json::parse_error& e) {
        throw ApiError::invalid_request("the request body is not valid JSON: " + parser_words(e));
    }
    if (!parsed.is_object())
        throw ApiError::invalid_request(std::string("the request body must be a JSON object, got ") +
                                        parsed.type_name());
    return parsed;
}

GenerationRequest parse_completion_request(const json& body, const ServedModel& model, const RequestLimits& limits) {
    GenerationRequest r = common_request(Api::Completions, body, model, limits);
    const json& prompt = completion_prompt_field(body);
    r.prompt = single_prompt(prompt, model);
    r.params.logprobs = top_logprobs_field(body, "logprobs");
    const bool echo = optional_bool(body, "echo").value_or(false);
    const std::optional<std::int64_t> max_tokens = optional_int(body, "max_tokens", 0, kMaxUint32);
    if (max_tokens == 0 && !echo)
        throw bad("'max_tokens' must be in [1, " + std::to_string(kMaxUint32) +
                      "], got 0 (0 only with 'echo': the prompt alone)", "max_tokens");
    r.params.max_new_tokens =
        max_tokens ? std::max<std::uint32_t>(static_cast<std::uint32_t>(*max_tokens), 1) : kDefaultCompletionTokens;
    if (echo) {
        r.echo = max_tokens == 0 ? Echo::PromptOnly : Echo::PromptAndCompletion;
        r.prompt_text = echoed_text(prompt, r.prompt, model);
        r.params.prompt_logprobs = r.params.logprobs;
    }
    check_context(r.prompt.size(), r.params.max_new_tokens, model, "prompt", "max_tokens");
    return r;
}

GenerationRequest parse_chat_request(const json& body, const ServedModel& model, const RequestLimits& limits) {
    GenerationRequest r = common_request(Api::Chat, body, model, limits);
    const std::optional<std::uint32_t> top = top_logprobs_field(body, "top_logprobs");
    if (optional_bool(body, "logprobs").value_or(false))
        r.params.logprobs = top.value_or(0);
    else if (top)
        throw bad("'top_logprobs' needs 'logprobs': true", "top_logprobs");
    check_chat_template(model);
    const std::vector<ChatMessage> messages = chat_messages(body);
    const ChatRenderOptions options = render_options(body);
    // max_completion_tokens replaced max_tokens in OpenAI's API; vLLM takes either, the new one first.
    const std::optional<std::uint32_t> new_name = max_tokens_field(body, "max_completion_tokens");
    const std::optional<std::uint32_t> max_tokens = new_name ? new_name : max_tokens_field(body, "max_tokens");
    const char* param = new_name ? "max_completion_tokens" : "max_tokens";
    if (messages.back().role == "user" && model.max_model_len > 0 &&
        ChatSession::is_history(std::span(messages).first(messages.size() - 1))) {
        plan_chat(r, messages, max_tokens.value_or(0), options, model, param);
        r.reasoning = reasoning_mode(*model.chat_template, *model.tokenizer, r.prompt);
        return r;
    }
    // Any other list of messages, rendered as it is: it has to fit.
    r.prompt = rendered_prompt(messages, model, options);
    const std::uint32_t rest = r.prompt.size() < model.max_model_len
                                   ? model.max_model_len - static_cast<std::uint32_t>(r.prompt.size())
                                   : 1; // no room: check_context below says so
    r.params.max_new_tokens = max_tokens.value_or(rest);
    check_context(r.prompt.size(), r.params.max_new_tokens, model, "messages", param);
    r.reasoning = reasoning_mode(*model.chat_template, *model.tokenizer, r.prompt);
    return r;
}

std::vector<TokenId> parse_tokenize_request(const json& body, const ServedModel& model) {
    if (field(body, "messages"))
        return chat_prompt(body, model);
    const std::optional<std::string> prompt = optional_string(body, "prompt");
    if (!prompt)
        throw bad("/tokenize needs 'prompt' (text) or 'messages'", "prompt");
    return model.tokenizer->encode(*prompt);
}

std::vector<TokenId> parse_detokenize_request(const json& body, const ServedModel& model) {
    const json* tokens = field(body, "tokens");
    if (!tokens)
        throw bad("'tokens' is required", "tokens");
    if (!tokens->is_array())
        throw wrong_type("tokens", "an array of token ids", *tokens);
    return checked_tokens(*tokens, model, "tokens");
}

} // namespace kvscope::serve
