// The OpenAI translation (net/serve/openai_request, openai_response) on
// stories260K's vocabulary: every check a request body must pass (status,
// type, param, message), prompts as text and as ids, chat through a chat
// template and without one, streams parsed back event by event, collected
// responses, and a real engine's outputs through both.
#include <QtTest>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "net/serve/openai_request.h"
#include "net/serve/openai_response.h"
#include "engine/model/gguf_file.h"
#include "engine/tokenizer/vocabulary.h"
#include "support/sse_events.h"
#include "support/test_models.h"

using namespace kvscope;
using namespace kvscope::serve;
using json = nlohmann::json;

using kvscope::test::events_of;

namespace {

constexpr const char* kChatml =
    "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + "
    "'<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";
// Recognised as Llama 2's, which refuses two user turns in a row.
constexpr const char* kLlama2 = "{{ bos_token + '[INST] ' + content.strip() + ' [/INST]' }} <<SYS>>";

struct Expected {
    int status = 400;
    std::optional<std::string> param;
    std::string message; // a substring of it
};

// Runs `call`, which must throw an ApiError as expected.
void expect_error(const std::function<void()>& call, const Expected& e) {
    try {
        call();
    } catch (const ApiError& error) {
        QCOMPARE(error.status(), e.status);
        QCOMPARE(error.param(), e.param);
        QVERIFY2(std::string(error.what()).find(e.message) != std::string::npos, error.what());
        QCOMPARE(error.to_json()["error"]["code"].get<int>(), e.status);
        return;
    }
    QFAIL(qPrintable(QStringLiteral("no ApiError; expected: %1").arg(QString::fromStdString(e.message))));
}


RequestOutput output(std::uint32_t index, std::string text, std::vector<TokenId> tokens,
                     std::optional<FinishReason> finish = std::nullopt, std::string error = {}) {
    return {7, index, std::move(text), std::move(tokens), finish, std::move(error)};
}

} // namespace

class TestOpenaiProtocol : public QObject {
    Q_OBJECT

private slots:
    void initTestCase();

    void body_limits_and_syntax();
    void string_prompt_encodes_as_generate_does();
    void token_id_prompts();
    void prompt_shapes_refused();
    void model_name();
    void fields_parsed();
    void fields_refused_data();
    void fields_refused();
    void context_length();
    void chat_renders_the_template();
    void chat_content_parts_and_roles();
    void chat_without_template();
    void chat_template_refusal();
    void chat_max_tokens();
    void chat_over_the_context();
    void tokenize_and_detokenize();
    void models_body();
    void chat_stream_events();
    void completion_stream_events();
    void stream_error_event();
    void collector_bodies();
    void collector_error();
    void engine_outputs_through_the_translation();

private:
    QString model_path_;
    std::unique_ptr<GgufFile> file_;
    std::unique_ptr<Tokenizer> tok_;
    std::unique_ptr<ChatTemplate> chatml_;
    std::unique_ptr<ChatTemplate> none_;
    ServedModel served_;

    ServedModel with_template(const ChatTemplate* chat) const {
        ServedModel m = served_;
        m.chat_template = chat;
        return m;
    }
    GenerationRequest completion(const json& body) const { return parse_completion_request(body, served_); }
    GenerationRequest chat(const json& body) const { return parse_chat_request(body, with_template(chatml_.get())); }
};

void TestOpenaiProtocol::initTestCase() {
    const QString path = kvscope::test::test_model_path(QStringLiteral("stories260K-f32.gguf"));
    if (path.isEmpty())
        QSKIP(qPrintable(QStringLiteral("shared models folder %1 is absent").arg(kvscope::test::test_models_dir())));
    model_path_ = path;
    file_ = std::make_unique<GgufFile>(path.toStdString());
    tok_ = std::make_unique<Tokenizer>(read_vocabulary(*file_));
    const std::string bos = tok_->token_text(tok_->bos());
    const std::string eos = tok_->token_text(tok_->eos());
    chatml_ = std::make_unique<ChatTemplate>(kChatml, bos, eos);
    QCOMPARE(chatml_->family(), ChatFamily::chatml);
    none_ = std::make_unique<ChatTemplate>(ChatTemplate::for_model(*file_, *tok_));
    QVERIFY(!none_->supported());
    served_ = {"stories", 512, 512, tok_.get(), none_.get()};
}

void TestOpenaiProtocol::body_limits_and_syntax() {
    QCOMPARE(parse_body(R"({"prompt": "hi"})")["prompt"], json("hi"));
    RequestLimits small;
    small.max_body_bytes = 32;
    expect_error([&] { parse_body(std::string(33, ' '), small); }, {413, {}, "at most 32"});
    expect_error([] { parse_body("{\"prompt\": \"\xC3\x28\"}"); }, {400, {}, "invalid UTF-8"});
    expect_error([] { parse_body("{\"prompt\": \"\xE2\x82\"}"); }, {400, {}, "invalid UTF-8"}); // truncated
    expect_error([] { parse_body(R"({"prompt": })"); }, {400, {}, "column 12"});
    expect_error([] { parse_body(""); }, {400, {}, "not valid JSON"});
    expect_error([] { parse_body("[1, 2]"); }, {400, {}, "must be a JSON object, got array"});
}

void TestOpenaiProtocol::string_prompt_encodes_as_generate_does() {
    // kvscope-cli generate --prompt encodes with the default options (BOS as
    // the vocabulary asks): the same ids, so greedy outputs agree.
    const GenerationRequest r = completion({{"prompt", "Once upon a time"}});
    QCOMPARE(r.prompt, tok_->encode("Once upon a time"));
    QCOMPARE(r.prompt.front(), tok_->bos());
    QCOMPARE(r.api, Api::Completions);
    QCOMPARE(r.model, std::string("stories"));
    QCOMPARE(r.params.max_new_tokens, 16u);
    QCOMPARE(r.params.n, 1u);
    QCOMPARE(r.params.sampling.temperature, 1.0f);
    QVERIFY(!r.stream);
    // A one-element batch is the same prompt.
    QCOMPARE(completion({{"prompt", {"Once upon a time"}}}).prompt, r.prompt);
}

void TestOpenaiProtocol::token_id_prompts() {
    const std::vector<TokenId> ids{1, 2, 300, tok_->n_tokens() - 1};
    QCOMPARE(completion({{"prompt", ids}}).prompt, ids);
    QCOMPARE(completion({{"prompt", {ids}}}).prompt, ids);
    const std::string vocab = std::to_string(tok_->n_tokens());
    expect_error([&] { completion({{"prompt", {1, tok_->n_tokens()}}}); },
                 {400, "prompt", "token id " + vocab + " is outside the vocabulary [0, " + vocab + ")"});
    expect_error([&] { completion({{"prompt", {1, -1}}}); }, {400, "prompt", "token id -1 is outside"});
    expect_error([&] { completion({{"prompt", {1, 2.5}}}); }, {400, "prompt", "must be integers"});
}

void TestOpenaiProtocol::prompt_shapes_refused() {
    expect_error([&] { completion(json::object()); }, {400, "prompt", "'prompt' is required"});
    expect_error([&] { completion({{"prompt", nullptr}}); }, {400, "prompt", "'prompt' is required"});
    expect_error([&] { completion({{"prompt", ""}}); }, {400, "prompt", "empty"});
    expect_error([&] { completion({{"prompt", json::array()}}); }, {400, "prompt", "empty"});
    expect_error([&] { completion({{"prompt", {""}}}); }, {400, "prompt", "empty"});
    expect_error([&] { completion({{"prompt", {"a", "b"}}}); }, {400, "prompt", "one prompt per request"});
    expect_error([&] { completion({{"prompt", {{1}, {2}}}}); }, {400, "prompt", "one prompt per request"});
    expect_error([&] { completion({{"prompt", 5}}); }, {400, "prompt", "'prompt' must be a string or an array"});
}

void TestOpenaiProtocol::model_name() {
    QCOMPARE(completion({{"prompt", "a"}, {"model", "stories"}}).model, std::string("stories"));
    expect_error([&] { completion({{"prompt", "a"}, {"model", "gpt-4"}}); },
                 {404, "model", "The model `gpt-4` does not exist."});
    expect_error([&] { completion({{"prompt", "a"}, {"model", 4}}); }, {400, "model", "must be a string, got number"});
    try {
        completion({{"prompt", "a"}, {"model", "gpt-4"}});
    } catch (const ApiError& e) {
        QCOMPARE(e.type(), std::string("not_found_error"));
    }
}

void TestOpenaiProtocol::fields_parsed() {
    const GenerationRequest r = completion({{"prompt", "a"},
                                            {"max_tokens", 5},
                                            {"temperature", 0},
                                            {"top_p", 0.5},
                                            {"top_k", 40},
                                            {"min_p", 0.1},
                                            {"seed", 42},
                                            {"n", 3},
                                            {"stop", "\n"},
                                            {"stream", true},
                                            {"stream_options", {{"include_usage", true}}},
                                            {"ignore_eos", true},
                                            {"repetition_penalty", 1.1},
                                            {"some_unknown_field", {1, 2}}});
    QCOMPARE(r.params.max_new_tokens, 5u);
    QCOMPARE(r.params.sampling.temperature, 0.0f);
    QCOMPARE(r.params.sampling.top_p, 0.5f);
    QCOMPARE(r.params.sampling.top_k, 40u);
    QCOMPARE(r.params.sampling.min_p, 0.1f);
    QCOMPARE(r.params.sampling.seed, std::uint64_t{42});
    QCOMPARE(r.params.sampling.repetition_penalty, 1.1f);
    QCOMPARE(r.params.n, 3u);
    QCOMPARE(r.params.stop_strings, std::vector<std::string>{"\n"});
    QVERIFY(r.stream);
    QVERIFY(r.include_usage);
    QVERIFY(r.params.ignore_eos);
    // Off spelled both ways; integral floats are integers; null is the default.
    QCOMPARE(completion({{"prompt", "a"}, {"top_k", -1}}).params.sampling.top_k, 0u);
    QCOMPARE(completion({{"prompt", "a"}, {"top_k", 0}}).params.sampling.top_k, 0u);
    QCOMPARE(completion({{"prompt", "a"}, {"max_tokens", 7.0}}).params.max_new_tokens, 7u);
    QCOMPARE(completion({{"prompt", "a"}, {"max_tokens", nullptr}}).params.max_new_tokens, 16u);
    QCOMPARE(completion({{"prompt", "a"}, {"stop", {"x", "yz"}}}).params.stop_strings,
             (std::vector<std::string>{"x", "yz"}));
    // include_usage means nothing without a stream.
    QVERIFY(!completion({{"prompt", "a"}, {"stream_options", {{"include_usage", true}}}}).include_usage);
}

void TestOpenaiProtocol::fields_refused_data() {
    QTest::addColumn<QString>("field");
    QTest::addColumn<QString>("value"); // JSON
    QTest::addColumn<QString>("message");
    const auto row = [](const char* field, const char* value, const char* message) {
        QTest::addRow("%s=%s", field, value) << field << value << message;
    };
    row("max_tokens", "0", "'max_tokens' must be in [1, "); // completions: 0 only with echo
    row("max_tokens", "\"10\"", "'max_tokens' must be an integer, got string");
    row("max_tokens", "1.5", "'max_tokens' must be an integer, got number");
    row("temperature", "\"hot\"", "'temperature' must be a number, got string");
    row("temperature", "2.5", "'temperature' must be in [0, 2], got 2.5");
    row("temperature", "-0.1", "'temperature' must be in [0, 2]");
    row("top_p", "0", "'top_p' must be in (0, 1], got 0");
    row("top_p", "1.5", "'top_p' must be in (0, 1]");
    row("top_k", "-2", "'top_k' must be in [-1, ");
    row("top_k", "2.5", "'top_k' must be an integer");
    row("min_p", "1.5", "'min_p' must be in [0, 1]");
    row("min_p", "[]", "'min_p' must be a number, got array");
    row("seed", "-1", "'seed' must be in [0, ");
    row("seed", "true", "'seed' must be an integer, got boolean");
    row("seed", "18446744073709551615", "'seed' must be in [0, 9223372036854775807]");
    row("max_tokens", "1e300", "'max_tokens' must be an integer");
    row("n", "0", "'n' must be in [1, 128], got 0");
    row("n", "129", "'n' must be in [1, 128], got 129");
    row("stop", "5", "'stop' must be a string or an array of strings, got number");
    row("stop", "[\"a\", 1]", "'stop' must be a string or an array of strings, got number");
    row("stream", "\"yes\"", "'stream' must be a boolean, got string");
    row("stream_options", "true", "'stream_options' must be an object");
    row("stream_options.include_usage", "1", "'stream_options.include_usage' must be a boolean, got number");
    row("ignore_eos", "1", "'ignore_eos' must be a boolean, got number");
    row("repetition_penalty", "0", "'repetition_penalty' must be in (0, 3.40");
    row("repetition_penalty", "1e39", "'repetition_penalty' must be in (0, 3.40");
    row("repetition_penalty", "\"x\"", "'repetition_penalty' must be a number");
}

void TestOpenaiProtocol::fields_refused() {
    QFETCH(QString, field);
    QFETCH(QString, value);
    QFETCH(QString, message);
    json body = {{"prompt", "a"}, {"stream", true}};
    body[json::json_pointer("/" + QString(field).replace('.', '/').toStdString())] = json::parse(value.toStdString());
    expect_error([&] { completion(body); }, {400, field.toStdString(), message.toStdString()});
    // The same checks guard chat.
    body.erase("prompt");
    body["messages"] = {{{"role", "user"}, {"content", "hi"}}};
    expect_error([&] { chat(body); }, {400, field.toStdString(), message.toStdString()});
}

void TestOpenaiProtocol::context_length() {
    ServedModel small = served_;
    small.max_model_len = 32;
    const std::vector<TokenId> ten(10, 5);
    QCOMPARE(parse_completion_request({{"prompt", ten}, {"max_tokens", 22}}, small).params.max_new_tokens, 22u);
    expect_error([&] { parse_completion_request({{"prompt", ten}, {"max_tokens", 23}}, small); },
                 {400, "max_tokens",
                  "This model's maximum context length is 32 tokens. However, you requested 33 tokens "
                  "(10 in the prompt, 23 in the completion). Please reduce"});
    expect_error([&] { parse_completion_request({{"prompt", std::vector<TokenId>(40, 5)}}, small); },
                 {400, "max_tokens", "you requested 56 tokens (40 in the prompt, 16 in the completion)"});
    // The stop strings' limits.
    RequestLimits limits;
    limits.max_stop_strings = 2;
    limits.max_stop_bytes = 3;
    expect_error([&] { parse_completion_request({{"prompt", "a"}, {"stop", {"a", "b", "c"}}}, served_, limits); },
                 {400, "stop", "at most 2"});
    expect_error([&] { parse_completion_request({{"prompt", "a"}, {"stop", "abcd"}}, served_, limits); },
                 {400, "stop", "longer than 3 bytes"});
}

void TestOpenaiProtocol::chat_renders_the_template() {
    const json messages = {{{"role", "system"}, {"content", "Be brief."}},
                           {{"role", "user"}, {"content", "Hi"}},
                           {{"role", "assistant"}, {"content", "Hello"}},
                           {{"role", "user"}, {"content", "Tell me a story"}}};
    const GenerationRequest r = chat({{"messages", messages}});
    const std::vector<ChatMessage> turns{
        {"system", "Be brief."}, {"user", "Hi"}, {"assistant", "Hello"}, {"user", "Tell me a story"}};
    const std::string rendered = chatml_->render(turns, {});
    QVERIFY(rendered.ends_with("<|im_start|>assistant\n")); // the generation prompt
    QCOMPARE(r.prompt, chatml_->encode(*tok_, rendered));
    QCOMPARE(r.api, Api::Chat);
}

void TestOpenaiProtocol::chat_content_parts_and_roles() {
    const json parts = {{{"type", "text"}, {"text", "Tell me "}}, {{"type", "text"}, {"text", "a story"}}};
    QCOMPARE(chat({{"messages", {{{"role", "user"}, {"content", parts}}}}}).prompt,
             chat({{"messages", {{{"role", "user"}, {"content", "Tell me a story"}}}}}).prompt);
    // An assistant turn may have null content (one that only called tools).
    chat({{"messages", {{{"role", "user"}, {"content", "a"}}, {{"role", "assistant"}, {"content", nullptr}}}}});

    const auto refused = [&](const json& messages, const std::string& message) {
        expect_error([&] { chat({{"messages", messages}}); }, {400, "messages", message});
    };
    refused(json::array(), "'messages' is empty");
    refused({{{"role", "tool"}, {"content", "x"}}}, "messages[0] has role 'tool'");
    refused({{{"role", "user"}, {"content", "x"}}, {{"role", "developer"}, {"content", "y"}}},
            "messages[1] has role 'developer'");
    refused({{{"role", "user"}, {"content", {{{"type", "image_url"}, {"image_url", "http://x"}}}}}},
            "part of type \"image_url\"");
    refused({{{"role", "user"}, {"content", nullptr}}}, "messages[0].content must be a string or an array");
    refused({{{"role", "user"}, {"content", 3}}}, "messages[0].content must be a string or an array");
    refused({{{"content", "x"}}}, "messages[0] needs a string 'role'");
    refused({"hello"}, "messages[0] must be an object");
    expect_error([&] { chat({{"messages", "hi"}}); }, {400, "messages", "'messages' must be an array, got string"});
    expect_error([&] { chat(json::object()); }, {400, "messages", "'messages' is required"});
}

void TestOpenaiProtocol::chat_without_template() {
    expect_error([&] { parse_chat_request({{"messages", {{{"role", "user"}, {"content", "hi"}}}}}, served_); },
                 {400, "messages", "no chat template kvscope can render"});
    expect_error([&] { parse_chat_request({{"messages", {{{"role", "user"}, {"content", "hi"}}}}}, served_); },
                 {400, "messages", "/v1/completions"});
}

void TestOpenaiProtocol::chat_template_refusal() {
    const ChatTemplate llama2(kLlama2, tok_->token_text(tok_->bos()), tok_->token_text(tok_->eos()));
    QCOMPARE(llama2.family(), ChatFamily::llama2);
    const std::vector<ChatMessage> twice{{"user", "a"}, {"user", "b"}};
    std::string why;
    try {
        llama2.render(twice);
    } catch (const Error& e) {
        why = e.what();
    }
    QVERIFY(!why.empty());
    const json body = {{"messages", {{{"role", "user"}, {"content", "a"}}, {{"role", "user"}, {"content", "b"}}}}};
    expect_error([&] { parse_chat_request(body, with_template(&llama2)); }, {400, "messages", why});
}

void TestOpenaiProtocol::chat_max_tokens() {
    const json messages = {{{"role", "user"}, {"content", "Hi"}}};
    const GenerationRequest r = chat({{"messages", messages}});
    QCOMPARE(r.params.max_new_tokens, served_.max_model_len - static_cast<std::uint32_t>(r.prompt.size()));
    QCOMPARE(chat({{"messages", messages}, {"max_tokens", 9}}).params.max_new_tokens, 9u);
    QCOMPARE(chat({{"messages", messages}, {"max_tokens", 9}, {"max_completion_tokens", 4}}).params.max_new_tokens,
             4u);
    expect_error([&] { chat({{"messages", messages}, {"max_completion_tokens", 0}}); },
                 {400, "max_completion_tokens", "'max_completion_tokens' must be in [1, "});
    // Past the context: the reply gets the room left, and the response says so.
    const std::uint32_t room = served_.max_model_len - static_cast<std::uint32_t>(r.prompt.size());
    for (const char* field : {"max_tokens", "max_completion_tokens"}) {
        const GenerationRequest limited = chat({{"messages", messages}, {field, 600}});
        QCOMPARE(limited.prompt, r.prompt);
        QCOMPARE(limited.params.max_new_tokens, room);
        QCOMPARE(limited.reply_limit, room);
        QCOMPARE(limited.dropped_messages, 0u);
    }
    QCOMPARE(r.reply_limit, 0u); // the room left by default: not "limited"
    QCOMPARE(chat({{"messages", messages}, {"max_tokens", room}}).reply_limit, 0u);
    // A last message that fills the context leaves no room for a reply.
    ServedModel tiny = with_template(chatml_.get());
    tiny.max_model_len = static_cast<std::uint32_t>(r.prompt.size());
    expect_error([&] { parse_chat_request({{"messages", messages}}, tiny); },
                 {400, "max_tokens", "in the messages, 1 in the completion"});
    expect_error([&] { parse_chat_request({{"messages", messages}, {"max_completion_tokens", 5}}, tiny); },
                 {400, "max_completion_tokens", "in the messages, 5 in the completion"});
}

void TestOpenaiProtocol::chat_over_the_context() {
    // Exchanges of a few dozen tokens each, a system message, a last question.
    const std::string story = "Once upon a time there was a little girl named Lily. She loved to play outside. ";
    json messages = {{{"role", "system"}, {"content", "Be brief."}}};
    std::vector<ChatMessage> turns{{"system", "Be brief."}};
    for (int i = 0; i < 6; ++i) {
        const std::string q = "Tell me story " + std::to_string(i) + ".";
        const std::string a = story + story;
        messages.push_back({{"role", "user"}, {"content", q}});
        messages.push_back({{"role", "assistant"}, {"content", a}});
        turns.push_back({"user", q});
        turns.push_back({"assistant", a});
    }
    messages.push_back({{"role", "user"}, {"content", "And another?"}});
    turns.push_back({"user", "And another?"});
    const auto rendered = [&](std::span<const ChatMessage> kept) {
        return chatml_->encode(*tok_, chatml_->render(kept, {}));
    };
    const std::vector<TokenId> whole = rendered(turns);
    QVERIFY(whole.size() > 512);

    // The oldest exchanges go until the prompt and max_tokens fit; the
    // system message stays; what is kept renders as it would alone.
    const GenerationRequest r = chat({{"messages", messages}, {"max_tokens", 100}});
    QVERIFY(r.dropped_messages > 0 && r.dropped_messages % 2 == 0);
    QCOMPARE(r.reply_limit, 0u);
    QCOMPARE(r.params.max_new_tokens, 100u);
    std::vector<ChatMessage> kept{turns.front()};
    kept.insert(kept.end(), turns.begin() + 1 + r.dropped_messages, turns.end());
    QCOMPARE(r.prompt, rendered(kept));
    QVERIFY(r.prompt.size() + 100 <= 512);
    std::vector<ChatMessage> one_more{turns.front()};
    one_more.insert(one_more.end(), turns.begin() + r.dropped_messages - 1, turns.end());
    QVERIFY(rendered(one_more).size() + 100 > 512); // no more went than had to

    // Without max_tokens: only what leaves no room goes, the reply gets the rest.
    const GenerationRequest rest = chat({{"messages", messages}});
    QVERIFY(rest.dropped_messages > 0 && rest.dropped_messages <= r.dropped_messages);
    QCOMPARE(rest.params.max_new_tokens + rest.prompt.size(), std::size_t{512});
    QCOMPARE(rest.reply_limit, 0u);

    // A last message longer than the room asked for: everything older goes
    // and the reply is limited to what is left.
    json long_last = messages;
    std::string question;
    while (tok_->encode(question).size() < 250)
        question += story;
    long_last.back()["content"] = question;
    const GenerationRequest limited = chat({{"messages", long_last}, {"max_completion_tokens", 400}});
    QCOMPARE(limited.dropped_messages, 12u);
    const std::vector<ChatMessage> alone{turns.front(), {"user", question}};
    QCOMPARE(limited.prompt, rendered(alone));
    QCOMPARE(limited.params.max_new_tokens, static_cast<std::uint32_t>(512 - limited.prompt.size()));
    QCOMPARE(limited.reply_limit, limited.params.max_new_tokens);
    QVERIFY(limited.reply_limit > 0 && limited.reply_limit < 400);

    // ...and one that alone fills the context still answers 400.
    json too_long = messages;
    too_long.back()["content"] = question + question + question;
    QVERIFY(tok_->encode(question + question + question).size() > 512);
    expect_error([&] { chat({{"messages", too_long}, {"max_tokens", 10}}); },
                 {400, "max_tokens", "maximum context length is 512 tokens"});

    // A list that does not end with the user's message is rendered as it
    // is, and has to fit, as before.
    json prefill = messages;
    prefill.back() = {{"role", "assistant"}, {"content", "Once"}};
    expect_error([&] { chat({{"messages", prefill}, {"max_tokens", 10}}); },
                 {400, "max_tokens", "maximum context length is 512 tokens"});
    // So is one where two users follow each other.
    json twice = messages;
    twice.push_back({{"role", "user"}, {"content", "Please?"}});
    expect_error([&] { chat({{"messages", twice}, {"max_tokens", 10}}); },
                 {400, "max_tokens", "maximum context length is 512 tokens"});

    // The response says what happened: in the body, and in a stream's first chunk only.
    ResponseHeader header{Api::Chat, "chatcmpl-9", "stories", 1, limited.dropped_messages, limited.reply_limit};
    const std::string note = "The conversation outgrew the model's context: its oldest 12 messages were left out "
                             "(the system prompt stays). The reply was limited to " +
                             std::to_string(limited.reply_limit) + " tokens: all the room the context had left.";
    const json expected = {{"dropped_messages", 12}, {"reply_limit", limited.reply_limit}, {"note", note}};
    ResponseCollector collector(header, 1, 3);
    collector.on_output(output(0, "Hi", {5}, FinishReason::Length));
    QCOMPARE(json::parse(collector.to_json().dump())["kvscope_context"], expected);
    ResponseStream stream(header, 2, false, 3);
    std::string sse = stream.begin();
    sse += stream.on_output(output(0, "Hi", {5}, FinishReason::Length));
    const std::vector<json> e = events_of(sse + stream.end());
    QCOMPARE(e.front()["kvscope_context"], expected);
    for (std::size_t i = 1; i < e.size(); ++i)
        QVERIFY(!e[i].is_object() || !e[i].contains("kvscope_context"));
    // Nothing dropped or limited: no such field.
    ResponseCollector plain({Api::Chat, "chatcmpl-10", "stories", 1}, 1, 3);
    plain.on_output(output(0, "Hi", {5}, FinishReason::Stop));
    QVERIFY(!json::parse(plain.to_json().dump()).contains("kvscope_context"));
    ResponseStream plain_stream({Api::Chat, "chatcmpl-10", "stories", 1}, 1, false, 3);
    QVERIFY(!events_of(plain_stream.begin()).front().contains("kvscope_context"));
}

void TestOpenaiProtocol::tokenize_and_detokenize() {
    QCOMPARE(parse_tokenize_request({{"prompt", "Once upon a time"}}, served_), tok_->encode("Once upon a time"));
    const json messages = {{{"role", "user"}, {"content", "Hi"}}};
    QCOMPARE(parse_tokenize_request({{"messages", messages}}, with_template(chatml_.get())),
             chat({{"messages", messages}}).prompt);
    expect_error([&] { parse_tokenize_request({{"prompt", 5}}, served_); }, {400, "prompt", "must be a string"});
    expect_error([&] { parse_tokenize_request(json::object(), served_); }, {400, "prompt", "needs 'prompt'"});

    const std::vector<TokenId> ids = tok_->encode("Once upon a time");
    QCOMPARE(parse_detokenize_request({{"tokens", ids}}, served_), ids);
    expect_error([&] { parse_detokenize_request({{"tokens", {1, 99999}}}, served_); },
                 {400, "tokens", "token id 99999 is outside the vocabulary"});
    expect_error([&] { parse_detokenize_request({{"tokens", "1 2"}}, served_); },
                 {400, "tokens", "must be an array of token ids"});

    const auto t = tokenize_response(ids, served_);
    QCOMPARE(t["tokens"].get<std::vector<TokenId>>(), ids);
    QCOMPARE(t["count"].get<std::size_t>(), ids.size());
    QCOMPARE(t["max_model_len"].get<std::uint32_t>(), 512u);
    QCOMPARE(detokenize_response(ids, served_)["prompt"].get<std::string>(), std::string("Once upon a time"));
}

void TestOpenaiProtocol::models_body() {
    const auto m = models_response(served_, 1700000000);
    QCOMPARE(m["object"].get<std::string>(), std::string("list"));
    QCOMPARE(m["data"].size(), 1u);
    const auto& d = m["data"][0];
    QCOMPARE(d["id"].get<std::string>(), std::string("stories"));
    QCOMPARE(d["object"].get<std::string>(), std::string("model"));
    QCOMPARE(d["created"].get<std::int64_t>(), 1700000000);
    QCOMPARE(d["owned_by"].get<std::string>(), std::string("kvscope"));
    QCOMPARE(d["root"].get<std::string>(), std::string("stories"));
    QVERIFY(d["parent"].is_null());
    QCOMPARE(d["max_model_len"].get<std::uint32_t>(), 512u);
    QCOMPARE(d["meta"]["n_vocab"].get<std::int32_t>(), tok_->n_tokens());
    QCOMPARE(d["meta"]["n_ctx_train"].get<std::uint32_t>(), 512u);
}

void TestOpenaiProtocol::chat_stream_events() {
    ResponseStream stream({Api::Chat, "chatcmpl-1", "stories", 1700000000}, 2, true, 4);
    std::string sse = stream.begin();
    sse += stream.on_output(output(0, "Hi", {5}));
    sse += stream.on_output(output(1, "Yo", {6}));
    sse += stream.on_output(output(0, "", {tok_->eos()}, FinishReason::Stop)); // EOS: sampled, no text
    QCOMPARE(stream.on_output(output(1, "", {})), std::string()); // nothing to send
    sse += stream.on_output(output(1, " there", {7}, FinishReason::Length));
    sse += stream.end();
    const std::vector<json> e = events_of(sse);
    QCOMPARE(e.size(), 9u);
    for (std::size_t i = 0; i + 1 < e.size(); ++i) {
        QCOMPARE(e[i]["id"], json("chatcmpl-1"));
        QCOMPARE(e[i]["object"], json("chat.completion.chunk"));
        QCOMPARE(e[i]["created"], json(1700000000));
        QCOMPARE(e[i]["model"], json("stories"));
    }
    const auto choice = [&](std::size_t i) { return e[i]["choices"][0]; };
    for (std::size_t i = 0; i < 2; ++i) { // the role first, for each sample
        QCOMPARE(choice(i)["index"], json(i));
        QCOMPARE(choice(i)["delta"], json({{"role", "assistant"}, {"content", ""}}));
        QVERIFY(choice(i)["finish_reason"].is_null());
    }
    QCOMPARE(choice(2)["delta"], json({{"content", "Hi"}}));
    QCOMPARE(choice(2)["index"], json(0));
    QCOMPARE(choice(3)["delta"], json({{"content", "Yo"}}));
    QCOMPARE(choice(3)["index"], json(1));
    QCOMPARE(choice(4)["delta"], json::object());
    QCOMPARE(choice(4)["finish_reason"], json("stop"));
    QCOMPARE(choice(4)["index"], json(0));
    QCOMPARE(choice(5)["delta"], json({{"content", " there"}}));
    QVERIFY(choice(5)["finish_reason"].is_null());
    QCOMPARE(choice(6)["finish_reason"], json("length"));
    QCOMPARE(choice(6)["index"], json(1));
    QCOMPARE(e[7]["choices"], json::array());
    QCOMPARE(e[7]["usage"], json({{"prompt_tokens", 4}, {"completion_tokens", 4}, {"total_tokens", 8}}));
    QCOMPARE(e[8], json("[DONE]"));
    QCOMPARE(stream.usage().completion_tokens, 4u);
}

void TestOpenaiProtocol::completion_stream_events() {
    ResponseStream stream({Api::Completions, "cmpl-1", "stories", 1}, 1, false, 3);
    QCOMPARE(stream.begin(), std::string());
    std::string sse = stream.on_output(output(0, " Once", {9}));
    sse += stream.on_output(output(0, " upon", {10}, FinishReason::Length));
    sse += stream.end();
    const std::vector<json> e = events_of(sse);
    QCOMPARE(e.size(), 4u); // no usage chunk unless asked
    QCOMPARE(e[0]["object"], json("text_completion"));
    QCOMPARE(e[0]["choices"][0],
             json({{"index", 0}, {"text", " Once"}, {"logprobs", nullptr}, {"finish_reason", nullptr}}));
    QCOMPARE(e[1]["choices"][0]["text"], json(" upon"));
    QCOMPARE(e[2]["choices"][0],
             json({{"index", 0}, {"text", ""}, {"logprobs", nullptr}, {"finish_reason", "length"}}));
    QCOMPARE(e[3], json("[DONE]"));
    QCOMPARE(stream.usage().completion_tokens, 2u);
}

void TestOpenaiProtocol::stream_error_event() {
    // Before any token: the engine refused the request (400).
    ResponseStream early({Api::Completions, "cmpl-2", "stories", 1}, 2, true, 3);
    std::string sse = early.on_output(output(0, "", {}, FinishReason::Error, "larger than the KV pool"));
    QCOMPARE(early.on_output(output(1, "", {}, FinishReason::Error, "larger than the KV pool")), std::string());
    QVERIFY(early.failed());
    sse += early.end();
    std::vector<json> e = events_of(sse);
    QCOMPARE(e.size(), 3u);
    QCOMPARE(e[0]["error"]["message"], json("larger than the KV pool"));
    QCOMPARE(e[0]["error"]["code"], json(400));
    QCOMPARE(e[0]["error"]["type"], json("invalid_request_error"));
    QVERIFY(e[1]["usage"].is_object());
    QCOMPARE(e[2], json("[DONE]"));
    // After tokens: a server fault (500).
    ResponseStream late({Api::Chat, "chatcmpl-2", "stories", 1}, 1, false, 3);
    sse = late.on_output(output(0, "a", {5}));
    sse += late.on_output(output(0, "", {}, FinishReason::Error, "kernel failed"));
    sse += late.end();
    e = events_of(sse);
    QCOMPARE(e.size(), 3u);
    QCOMPARE(e[1]["error"]["code"], json(500));
    QCOMPARE(e[2], json("[DONE]"));
}

void TestOpenaiProtocol::collector_bodies() {
    ResponseCollector completions({Api::Completions, "cmpl-3", "stories", 5}, 2, 4);
    completions.on_output(output(1, "B", {3}));
    completions.on_output(output(0, "A", {2}));
    QVERIFY(!completions.done());
    completions.on_output(output(0, "a", {4}, FinishReason::Length));
    QVERIFY(!completions.done());
    completions.on_output(output(1, "", {tok_->eos()}, FinishReason::Stop));
    QVERIFY(completions.done());
    QVERIFY(!completions.error());
    const json c = json::parse(completions.to_json().dump());
    QCOMPARE(c["id"], json("cmpl-3"));
    QCOMPARE(c["object"], json("text_completion"));
    QCOMPARE(c["created"], json(5));
    QCOMPARE(c["model"], json("stories"));
    QCOMPARE(c["choices"].size(), 2u);
    QCOMPARE(c["choices"][0],
             json({{"index", 0}, {"text", "Aa"}, {"logprobs", nullptr}, {"finish_reason", "length"}}));
    QCOMPARE(c["choices"][1]["index"], json(1));
    QCOMPARE(c["choices"][1]["text"], json("B"));
    QCOMPARE(c["choices"][1]["finish_reason"], json("stop"));
    QCOMPARE(c["usage"], json({{"prompt_tokens", 4}, {"completion_tokens", 4}, {"total_tokens", 8}}));

    ResponseCollector chat({Api::Chat, "chatcmpl-3", "stories", 5}, 1, 2);
    chat.on_output(output(0, "Hello", {8}, FinishReason::Abort));
    QVERIFY(chat.done());
    const json h = json::parse(chat.to_json().dump());
    QCOMPARE(h["object"], json("chat.completion"));
    QCOMPARE(h["choices"][0]["message"], json({{"role", "assistant"}, {"content", "Hello"}}));
    QCOMPARE(h["choices"][0]["finish_reason"], json("abort"));
}

void TestOpenaiProtocol::collector_error() {
    ResponseCollector early({Api::Completions, "cmpl-4", "stories", 5}, 2, 4);
    early.on_output(output(0, "", {}, FinishReason::Error, "no KV block fits"));
    QVERIFY(early.done());
    QVERIFY(early.error());
    QCOMPARE(early.error()->status(), 400);
    QCOMPARE(std::string(early.error()->what()), std::string("no KV block fits"));
    ResponseCollector late({Api::Chat, "chatcmpl-4", "stories", 5}, 1, 4);
    late.on_output(output(0, "x", {5}));
    late.on_output(output(0, "", {}, FinishReason::Error, "kernel failed"));
    QCOMPARE(late.error()->status(), 500);
    QCOMPARE(late.error()->type(), std::string("internal_server_error"));
}

void TestOpenaiProtocol::engine_outputs_through_the_translation() {
    // A real engine's outputs: the stream's text equals the collector's, and
    // completion_tokens counts every sampled token (EOS too).
    EngineConfig config;
    config.kv_dtype = KvDtype::F32;
    config.num_blocks = 64;
    Engine engine(config, std::make_shared<const Model>(model_path_.toStdString()));
    const GenerationRequest r =
        completion({{"prompt", "Once upon a time"}, {"max_tokens", 24}, {"temperature", 0}, {"n", 2}});
    const auto prompt_tokens = static_cast<std::uint32_t>(r.prompt.size());
    ResponseStream stream({Api::Completions, "cmpl-5", "stories", 1}, r.params.n, true, prompt_tokens);
    ResponseCollector collector({Api::Completions, "cmpl-5", "stories", 1}, r.params.n, prompt_tokens);
    std::string sse;
    std::uint32_t sampled = 0;
    engine.set_output_callback([&](const RequestOutput& out) {
        sse += stream.on_output(out);
        collector.on_output(out);
        sampled += static_cast<std::uint32_t>(out.tokens.size());
    });
    engine.add_request(r.prompt, r.params).id();
    for (int i = 0; i < 1000 && engine.has_work(); ++i)
        engine.step();
    sse += stream.end();
    QVERIFY(collector.done());
    QVERIFY(!collector.error());
    const auto body = collector.to_json();
    std::string streamed[2];
    for (const json& e : events_of(sse))
        if (e.is_object() && !e["choices"].empty())
            streamed[e["choices"][0]["index"].get<std::size_t>()] += e["choices"][0]["text"].get<std::string>();
    for (std::size_t i = 0; i < 2; ++i) {
        QVERIFY(!streamed[i].empty());
        QCOMPARE(body["choices"][i]["text"].get<std::string>(), streamed[i]);
    }
    QCOMPARE(body["choices"][0]["text"], body["choices"][1]["text"]); // greedy: both samples agree
    QCOMPARE(body["usage"]["completion_tokens"].get<std::uint32_t>(), sampled);
    QCOMPARE(stream.usage().completion_tokens, sampled);
    QVERIFY(sampled <= 48);
}

QTEST_GUILESS_MAIN(TestOpenaiProtocol)
#include "test_openai_protocol.moc"
