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

} // namespace

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

ResponseStream::ResponseStream(ResponseHeader header, std::uint32_t n, bool include_usage, std::uint32_t prompt_tokens)
    : header_(std::move(header)), n_(n), include_usage_(include_usage), usage_{prompt_tokens, 0} {}

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

// Completions: {index, text, logprobs, finish_reason}; chat: a delta with
// the text, or empty once the sample has finished.
ojson ResponseStream::choice(std::uint32_t index, std::string_view text, std::optional<FinishReason> finish) const {
    ojson c = {{"index", index}};
    if (header_.api == Api::Completions)
        c["text"] = text;
    else
        c["delta"] = finish ? ojson::object() : ojson{{"content", text}};
    c["logprobs"] = nullptr;
    c["finish_reason"] = finish_json(finish);
    return c;
}

std::string ResponseStream::begin() {
    if (header_.api == Api::Completions)
        return {};
    std::string events;
    for (std::uint32_t i = 0; i < n_; ++i) {
        ojson c = choice(i, "", std::nullopt);
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
    std::string events;
    if (!out.text.empty())
        events += sse_event(chunk(ojson::array({choice(out.index, out.text, std::nullopt)})));
    if (out.finish)
        events += sse_event(chunk(ojson::array({choice(out.index, "", out.finish)})));
    return events;
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

ResponseCollector::ResponseCollector(ResponseHeader header, std::uint32_t n, std::uint32_t prompt_tokens)
    : header_(std::move(header)), choices_(n), usage_{prompt_tokens, 0} {}

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
            c["text"] = choices_[i].text;
        else
            c["message"] = {{"role", "assistant"}, {"content", choices_[i].text}};
        c["logprobs"] = nullptr;
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
