#include "net/serve/openai_response.h"

#include <algorithm>
#include <random>

#include "engine/chat/chat_session.h"

namespace kvscope::serve {

namespace {

using ojson = nlohmann::ordered_json;

ojson finish_json(std::optional<FinishReason> finish) {
    return finish ? ojson(std::string(finish_reason_word(*finish))) : ojson(nullptr);
}

std::string_view object_name(Api api, bool streamed) {
    if (api == Api::Completions)
        return "text_completion";
    return streamed ? "chat.completion.chunk" : "chat.completion";
}

ojson identity(const ResponseHeader& h, bool streamed) {
    return {{"id", h.id},
            {"object", std::string(object_name(h.api, streamed))},
            {"created", h.created},
            {"model", h.model}};
}

// The text a choice shows for what it generated: the echoed prompt in front
// of its first piece, and nothing generated with Echo::PromptOnly.
std::string shown_text(const ChoiceContent& c, bool first, std::string_view generated) {
    std::string shown = first && c.echo != Echo::None ? c.prompt_text : std::string();
    if (c.echo != Echo::PromptOnly)
        shown += generated;
    return shown;
}

// The tokens whose log-probabilities a choice shows, in the same order: the
// echoed prompt's with `first` (its first token has none), then the
// generated ones (none with Echo::PromptOnly).
std::vector<LoggedToken> shown_tokens(const ChoiceContent& c, bool first,
                                      std::span<const PositionLogprobs> prompt_logprobs,
                                      std::span<const TokenId> generated, std::span<const PositionLogprobs> logprobs) {
    std::vector<LoggedToken> shown;
    if (first && c.echo != Echo::None)
        for (std::size_t i = 0; i < c.prompt.size(); ++i)
            shown.push_back({c.prompt[i], i >= 1 && i <= prompt_logprobs.size() ? &prompt_logprobs[i - 1] : nullptr});
    if (c.echo != Echo::PromptOnly)
        for (std::size_t i = 0; i < generated.size(); ++i)
            shown.push_back({generated[i], i < logprobs.size() ? &logprobs[i] : nullptr});
    return shown;
}

ojson logprobs_object(Api api, const ChoiceContent& c, std::span<const LoggedToken> tokens, std::size_t& offset) {
    return api == Api::Completions ? completion_logprobs(tokens, c.tokens, offset) : chat_logprobs(tokens, c.tokens);
}

// A chat delta: the parts that have text, or an empty content (a delta that
// carries log-probabilities only, or the role's).
ojson delta_json(const ReasoningText& text) {
    ojson delta = ojson::object();
    if (!text.reasoning.empty())
        delta["reasoning_content"] = text.reasoning;
    if (!text.content.empty() || text.reasoning.empty())
        delta["content"] = text.content;
    return delta;
}

// A whole chat message; reasoning_content only when the reply reasoned.
ojson message_json(const ReasoningText& text) {
    ojson message = {{"role", "assistant"}, {"content", text.content}};
    if (!text.reasoning.empty())
        message["reasoning_content"] = text.reasoning;
    return message;
}

} // namespace

ChoiceContent choice_content(const GenerationRequest& request, const Tokenizer& tokenizer) {
    const bool echo = request.echo != Echo::None;
    return {request.params.logprobs.has_value(), {&tokenizer, request.tokens_as_ids}, request.echo,
            request.prompt_text, echo ? request.prompt : std::vector<TokenId>{}, request.reasoning};
}

std::string_view finish_reason_word(FinishReason reason) {
    switch (reason) {
    case FinishReason::Stop: return "stop";
    case FinishReason::Length: return "length";
    case FinishReason::Abort: return "abort";
    case FinishReason::Error: return "error";
    }
    return "error";
}

ojson Usage::to_json() const {
    return {{"prompt_tokens", prompt_tokens},
            {"completion_tokens", completion_tokens},
            {"total_tokens", prompt_tokens + completion_tokens}};
}

ojson context_json(const ResponseHeader& h) {
    if (h.dropped_messages == 0 && h.reply_limit == 0)
        return nullptr;
    return {{"dropped_messages", h.dropped_messages},
            {"reply_limit", h.reply_limit},
            {"note", context_note(h.dropped_messages, h.reply_limit)}};
}

std::string sse_event(const ojson& chunk) { return "data: " + chunk.dump() + "\n\n"; }

ApiError engine_error(const RequestOutput& out, bool any_token) {
    if (!any_token)
        return ApiError::invalid_request(out.error);
    return {500, "internal_server_error", out.error};
}

ApiError service_error(const ServiceRefusal& refusal) {
    if (refusal.kind == ServiceRefusal::Kind::Engine)
        return ApiError::invalid_request(refusal.message);
    return ApiError::overloaded(refusal.message);
}

ResponseStream::ResponseStream(ResponseHeader header, std::uint32_t n, bool include_usage, std::uint32_t prompt_tokens,
                               ChoiceContent content)
    : header_(std::move(header)), n_(n), include_usage_(include_usage), usage_{prompt_tokens, 0},
      content_(std::move(content)), states_(n, ChoiceState{.split = ReasoningSplitter(content_.reasoning)}) {}

ojson ResponseStream::chunk(ojson choices) {
    ojson c = identity(header_, true);
    c["choices"] = std::move(choices);
    if (!chunk_sent_) {
        chunk_sent_ = true;
        if (ojson context = context_json(header_); !context.is_null())
            c["kvscope_context"] = std::move(context);
    }
    return c;
}

// Completions: {index, text, logprobs, finish_reason} (all of it is
// content); chat: a delta with the text, or empty once the sample has
// finished.
ojson ResponseStream::choice(std::uint32_t index, const ReasoningText& text, std::optional<FinishReason> finish) const {
    ojson c = {{"index", index}};
    if (header_.api == Api::Completions)
        c["text"] = text.content;
    else
        c["delta"] = finish ? ojson::object() : delta_json(text);
    c["logprobs"] = nullptr;
    c["finish_reason"] = finish_json(finish);
    return c;
}

std::string ResponseStream::begin() {
    if (header_.api == Api::Completions)
        return {};
    std::string events;
    for (std::uint32_t i = 0; i < n_; ++i) {
        ojson c = choice(i, {}, std::nullopt);
        c["delta"] = {{"role", "assistant"}, {"content", ""}};
        events += sse_event(chunk(ojson::array({c})));
    }
    return events;
}

std::string ResponseStream::on_output(const RequestOutput& out) {
    if (failed_)
        return {};
    if (out.finish == FinishReason::Error) {
        failed_ = true;
        return sse_event(engine_error(out, usage_.completion_tokens > 0).to_json());
    }
    usage_.completion_tokens += static_cast<std::uint32_t>(out.tokens.size());
    std::string events = delta(out);
    if (out.finish)
        events += sse_event(chunk(ojson::array({choice(out.index, {}, out.finish)})));
    return events;
}

// The text and tokens `out` adds to its choice, as one chunk; "" when it
// shows nothing.
std::string ResponseStream::delta(const RequestOutput& out) {
    if (out.index >= states_.size())
        return {};
    ChoiceState& state = states_[out.index];
    const bool first = !state.started && !out.tokens.empty();
    state.started = state.started || first;
    ReasoningText text = state.split.push(shown_text(content_, first, out.text));
    if (out.finish)
        text += state.split.finish();
    const std::vector<LoggedToken> tokens =
        content_.logprobs ? shown_tokens(content_, first, out.prompt_logprobs, out.tokens, out.logprobs)
                          : std::vector<LoggedToken>{};
    if (text.empty() && tokens.empty())
        return {};
    ojson c = choice(out.index, text, std::nullopt);
    if (content_.logprobs)
        c["logprobs"] = logprobs_object(header_.api, content_, tokens, state.offset);
    return sse_event(chunk(ojson::array({c})));
}

std::string ResponseStream::end() {
    std::string events;
    if (include_usage_) {
        ojson c = chunk(ojson::array());
        c["usage"] = usage_.to_json();
        events += sse_event(c);
    }
    events += kSseDone;
    return events;
}

ResponseCollector::ResponseCollector(ResponseHeader header, std::uint32_t n, std::uint32_t prompt_tokens,
                                     ChoiceContent content)
    : header_(std::move(header)), content_(std::move(content)), choices_(n), usage_{prompt_tokens, 0} {}

void ResponseCollector::on_output(const RequestOutput& out) {
    if (out.finish == FinishReason::Error && !error_)
        error_ = engine_error(out, usage_.completion_tokens > 0);
    usage_.completion_tokens += static_cast<std::uint32_t>(out.tokens.size());
    if (out.index >= choices_.size())
        return;
    Choice& c = choices_[out.index];
    c.text += out.text;
    if (out.finish)
        c.finish = out.finish;
    if (content_.logprobs) {
        c.tokens.insert(c.tokens.end(), out.tokens.begin(), out.tokens.end());
        c.logprobs.insert(c.logprobs.end(), out.logprobs.begin(), out.logprobs.end());
        c.prompt_logprobs.insert(c.prompt_logprobs.end(), out.prompt_logprobs.begin(), out.prompt_logprobs.end());
    }
}

ojson ResponseCollector::logprobs_json(const Choice& c) const {
    if (!content_.logprobs)
        return nullptr;
    std::size_t offset = 0;
    return logprobs_object(header_.api, content_,
                                shown_tokens(content_, true, c.prompt_logprobs, c.tokens, c.logprobs), offset);
}

bool ResponseCollector::done() const {
    const auto finished = [](const Choice& c) { return c.finish.has_value(); };
    return error_ || std::all_of(choices_.begin(), choices_.end(), finished);
}

ojson ResponseCollector::to_json() const {
    ojson choices = ojson::array();
    for (std::uint32_t i = 0; i < choices_.size(); ++i) {
        ojson c = {{"index", i}};
        if (header_.api == Api::Completions)
            c["text"] = shown_text(content_, true, choices_[i].text);
        else
            c["message"] = message_json(split_reasoning(choices_[i].text, content_.reasoning));
        c["logprobs"] = logprobs_json(choices_[i]);
        c["finish_reason"] = finish_json(choices_[i].finish);
        choices.push_back(std::move(c));
    }
    ojson body = identity(header_, false);
    body["choices"] = std::move(choices);
    body["usage"] = usage_.to_json();
    if (ojson context = context_json(header_); !context.is_null())
        body["kvscope_context"] = std::move(context);
    return body;
}

std::string new_response_id(Api api) {
    thread_local std::mt19937_64 rng{std::random_device{}()};
    static constexpr char kHex[] = "0123456789abcdef";
    std::string id = api == Api::Completions ? "cmpl-" : "chatcmpl-";
    for (int i = 0; i < 32; ++i)
        id += kHex[rng() & 15];
    return id;
}

ojson models_response(const ServedModel& model, std::int64_t created) {
    const ojson entry = {{"id", model.name},
                         {"object", "model"},
                         {"created", created},
                         {"owned_by", "kvscope"},
                         {"root", model.name},
                         {"parent", nullptr},
                         {"max_model_len", model.max_model_len},
                         {"meta", {{"n_vocab", model.tokenizer->n_tokens()}, {"n_ctx_train", model.n_ctx_train}}}};
    return {{"object", "list"}, {"data", ojson::array({entry})}};
}

ojson tokenize_response(std::span<const TokenId> tokens, const ServedModel& model) {
    return {{"tokens", std::vector<TokenId>(tokens.begin(), tokens.end())},
            {"count", tokens.size()},
            {"max_model_len", model.max_model_len}};
}

ojson detokenize_response(std::span<const TokenId> tokens, const ServedModel& model) {
    return {{"prompt", model.tokenizer->decode(tokens)}};
}

} // namespace kvscope::serve
