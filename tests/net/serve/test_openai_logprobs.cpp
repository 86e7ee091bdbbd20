// Log-probabilities through the OpenAI translation on stories260K: the
// request fields (bad values answer 400 naming them), the legacy
// completions shape and chat's, echo with max_tokens 0 and more, prompts
// as token ids, return_tokens_as_token_ids, and a real engine's outputs
// streamed and collected, checked against teacher forcing.
#include <QtTest>

#include <cmath>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "engine/model/gguf_file.h"
#include "engine/runtime/perplexity.h"
#include "engine/runtime/teacher_forcing.h"
#include "engine/tokenizer/vocabulary.h"
#include "net/serve/openai_request.h"
#include "net/serve/openai_response.h"
#include "support/test_models.h"

using namespace kvscope;
using namespace kvscope::serve;
using json = nlohmann::json;

namespace {

constexpr const char* kChatml =
    "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + "
    "'<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

void expect_400(const std::function<void()>& call, const std::string& param, const std::string& message) {
    try {
        call();
    } catch (const ApiError& error) {
        QCOMPARE(error.status(), 400);
        QCOMPARE(error.param(), std::optional(param));
        QVERIFY2(std::string(error.what()).find(message) != std::string::npos, error.what());
        return;
    }
    QFAIL(qPrintable(QString::fromStdString("no ApiError; expected: " + message)));
}

// Each chunk's JSON of an SSE string, [DONE] left out.
std::vector<json> chunks_of(const std::string& sse) {
    std::vector<json> chunks;
    for (std::size_t at = 0; at < sse.size();) {
        const std::size_t end = sse.find("\n\n", at);
        const std::string data = sse.substr(at + 6, end - at - 6);
        if (data != "[DONE]")
            chunks.push_back(json::parse(data));
        at = end + 2;
    }
    return chunks;
}

PositionLogprobs position(TokenId chosen, float logprob, std::vector<TokenLogprob> top) {
    return {{chosen, logprob}, std::move(top)};
}

RequestOutput output(std::vector<TokenId> tokens, std::string text, std::vector<PositionLogprobs> logprobs,
                     std::optional<FinishReason> finish = std::nullopt) {
    RequestOutput o;
    o.tokens = std::move(tokens);
    o.text = std::move(text);
    o.logprobs = std::move(logprobs);
    o.finish = finish;
    return o;
}

} // namespace

class TestOpenaiLogprobs : public QObject {
    Q_OBJECT

private slots:
    void initTestCase();
    void fields();
    void fields_refused();
    void completion_shape();
    void chat_shape();
    void stream_offsets_continue();
    void echo_of_token_ids_equals_teacher_forcing_data();
    void echo_of_token_ids_equals_teacher_forcing();
    void chat_logprobs_from_the_engine();

private:
    // Runs the request on a fresh engine, through a collector and a stream.
    std::pair<json, std::vector<json>> serve(const GenerationRequest& r);

    std::shared_ptr<const Model> model_;
    std::unique_ptr<Tokenizer> tok_;
    std::unique_ptr<ChatTemplate> chatml_;
    ServedModel served_;
};

void TestOpenaiLogprobs::initTestCase() {
    KVSCOPE_REQUIRE_MODEL(path, "stories260K-f32.gguf");
    model_ = std::make_shared<const Model>(path.toStdString());
    tok_ = std::make_unique<Tokenizer>(read_vocabulary(model_->file()));
    chatml_ = std::make_unique<ChatTemplate>(kChatml, tok_->token_text(tok_->bos()), tok_->token_text(tok_->eos()));
    served_ = {"stories", 512, 512, tok_.get(), chatml_.get()};
}

void TestOpenaiLogprobs::fields() {
    const std::vector<TokenId> ids{1, 403, 407, 261};
    GenerationRequest r = parse_completion_request(
        {{"prompt", json::array({ids})}, {"echo", true}, {"max_tokens", 0}, {"logprobs", 3},
         {"return_tokens_as_token_ids", true}},
        served_);
    QCOMPARE(r.prompt, ids); // [[ids]]: a batch of one prompt of ids
    QCOMPARE(r.echo, Echo::PromptOnly);
    QCOMPARE(r.params.max_new_tokens, 1u); // the engine samples one token nobody sees
    QCOMPARE(r.params.logprobs, std::optional(3u));
    QCOMPARE(r.params.prompt_logprobs, std::optional(3u));
    QCOMPARE(r.prompt_text, tok_->decode(ids));
    QVERIFY(r.tokens_as_ids);

    r = parse_completion_request({{"prompt", "Once upon"}, {"echo", true}, {"max_tokens", 4}}, served_);
    QCOMPARE(r.echo, Echo::PromptAndCompletion);
    QCOMPARE(r.prompt_text, std::string("Once upon"));
    QVERIFY(!r.params.logprobs && !r.params.prompt_logprobs); // echo alone: text, no log-probabilities
    r = parse_completion_request({{"prompt", "Once"}, {"logprobs", 0}}, served_);
    QCOMPARE(r.params.logprobs, std::optional(0u));
    QVERIFY(!r.params.prompt_logprobs);

    const json messages = {{{"role", "user"}, {"content", "hi"}}};
    QVERIFY(!parse_chat_request({{"messages", messages}, {"logprobs", false}}, served_).params.logprobs);
    QCOMPARE(parse_chat_request({{"messages", messages}, {"logprobs", true}}, served_).params.logprobs,
             std::optional(0u));
    QCOMPARE(parse_chat_request({{"messages", messages}, {"logprobs", true}, {"top_logprobs", 20}}, served_)
                 .params.logprobs,
             std::optional(20u));
}

void TestOpenaiLogprobs::fields_refused() {
    const auto completion = [&](json extra) {
        extra["prompt"] = "Once";
        return [this, extra] { parse_completion_request(extra, served_); };
    };
    expect_400(completion({{"logprobs", 21}}), "logprobs", "'logprobs' must be in [0, 20], got 21");
    expect_400(completion({{"logprobs", -1}}), "logprobs", "'logprobs' must be in [0, 20], got -1");
    expect_400(completion({{"logprobs", true}}), "logprobs", "'logprobs' must be an integer, got boolean");
    expect_400(completion({{"echo", "yes"}}), "echo", "'echo' must be a boolean, got string");
    expect_400(completion({{"max_tokens", 0}}), "max_tokens", "got 0 (0 only with 'echo'");
    expect_400(completion({{"return_tokens_as_token_ids", 1}}), "return_tokens_as_token_ids",
               "'return_tokens_as_token_ids' must be a boolean");
    const auto chat = [&](json extra) {
        extra["messages"] = {{{"role", "user"}, {"content", "hi"}}};
        return [this, extra] { parse_chat_request(extra, served_); };
    };
    expect_400(chat({{"logprobs", true}, {"top_logprobs", 21}}), "top_logprobs",
               "'top_logprobs' must be in [0, 20], got 21");
    expect_400(chat({{"top_logprobs", 2}}), "top_logprobs", "'top_logprobs' needs 'logprobs': true");
    expect_400(chat({{"logprobs", false}, {"top_logprobs", 2}}), "top_logprobs", "needs 'logprobs': true");
    expect_400(chat({{"logprobs", 5}}), "logprobs", "'logprobs' must be a boolean, got number");
}

// The legacy shape: the chosen token joins its top list when it is not
// among them; -inf becomes -9999; text_offset counts characters.
void TestOpenaiLogprobs::completion_shape() {
    const std::vector<TokenId> words = tok_->encode("Once upon", {.add_special = false}); // " Once", " upon"
    const TokenId once = words.at(0), upon = words.at(1);
    const float inf = std::numeric_limits<float>::infinity();
    ChoiceContent content{true, {tok_.get(), false}, Echo::PromptAndCompletion, "Once", {tok_->bos(), once}, {}};
    ResponseCollector collector({Api::Completions, "cmpl-1", "stories", 1}, 1, 2, content);
    RequestOutput out = output({upon}, " upon", {position(upon, -inf, {{once, -0.5f}})}, FinishReason::Length);
    out.prompt_logprobs = {position(once, -1.25f, {{once, -1.25f}})};
    collector.on_output(out);
    const json c = json::parse(collector.to_json().dump())["choices"][0];
    QCOMPARE(c["text"], json("Once upon"));
    const json& l = c["logprobs"];
    QCOMPARE(l["tokens"], json({"<s>", " Once", " upon"}));
    QCOMPARE(l["token_logprobs"], json({nullptr, -1.25, -9999.0}));
    QCOMPARE(l["top_logprobs"], json({nullptr, {{" Once", -1.25}}, {{" Once", -0.5}, {" upon", -9999.0}}}));
    QCOMPARE(l["text_offset"], json({0, 3, 8}));

    content.tokens.as_ids = true; // names change, offsets still count the text
    ResponseCollector ids({Api::Completions, "cmpl-2", "stories", 1}, 1, 2, content);
    ids.on_output(out);
    const json li = json::parse(ids.to_json().dump())["choices"][0]["logprobs"];
    QCOMPARE(li["tokens"], json({"token_id:1", "token_id:" + std::to_string(once), "token_id:" + std::to_string(upon)}));
    QVERIFY(li["top_logprobs"][2].contains("token_id:" + std::to_string(upon)));
    QCOMPARE(li["text_offset"], json({0, 3, 8}));
}

// Chat: top_logprobs is the top list alone; bytes are the token's own bytes.
void TestOpenaiLogprobs::chat_shape() {
    const TokenId upon = tok_->encode("Once upon", {.add_special = false}).at(1);
    ChoiceContent content{true, {tok_.get(), false}, Echo::None, {}, {}, {}};
    ResponseCollector collector({Api::Chat, "chatcmpl-1", "stories", 1}, 1, 2, content);
    collector.on_output(output({upon, tok_->eos()}, " upon",
                               {position(upon, -0.25f, {{upon, -0.25f}}), position(tok_->eos(), -3.0f, {{upon, -0.1f}})},
                               FinishReason::Stop));
    const json c = json::parse(collector.to_json().dump())["choices"][0];
    QCOMPARE(c["message"]["content"], json(" upon"));
    const json bytes = json::array({32, 117, 112, 111, 110});
    QCOMPARE(c["logprobs"]["content"][0],
             json({{"token", " upon"},
                   {"logprob", -0.25},
                   {"bytes", bytes},
                   {"top_logprobs", {{{"token", " upon"}, {"logprob", -0.25}, {"bytes", bytes}}}}}));
    QCOMPARE(c["logprobs"]["content"][1]["token"], json("</s>"));
    QCOMPARE(c["logprobs"]["content"][1]["top_logprobs"].size(), 1u);
    // Without logprobs: null, as before.
    ResponseCollector plain({Api::Chat, "chatcmpl-2", "stories", 1}, 1, 2);
    plain.on_output(output({upon}, " upon", {}, FinishReason::Length));
    QVERIFY(json::parse(plain.to_json().dump())["choices"][0]["logprobs"].is_null());
}

// Each streamed chunk carries its tokens; text_offset goes on where the
// last chunk stopped, and a token whose text is not out yet still comes.
void TestOpenaiLogprobs::stream_offsets_continue() {
    const TokenId once = tok_->encode("Once", {.add_special = false}).at(0);
    ChoiceContent content{true, {tok_.get(), false}, Echo::None, {}, {}, {}};
    ResponseStream stream({Api::Completions, "cmpl-3", "stories", 1}, 1, false, 2, content);
    std::string sse = stream.on_output(output({once}, " Once", {position(once, -1.0f, {})}));
    sse += stream.on_output(output({tok_->eos()}, "", {position(tok_->eos(), -2.0f, {})}, FinishReason::Stop));
    const std::vector<json> chunks = chunks_of(sse + stream.end());
    QCOMPARE(chunks.size(), 3u); // " Once", the EOS token (no text), the finish
    QCOMPARE(chunks[0]["choices"][0]["logprobs"]["text_offset"], json::array({0}));
    QCOMPARE(chunks[1]["choices"][0]["text"], json(""));
    QCOMPARE(chunks[1]["choices"][0]["logprobs"]["tokens"], json({"</s>"}));
    QCOMPARE(chunks[1]["choices"][0]["logprobs"]["text_offset"], json({5}));
    QCOMPARE(chunks[1]["choices"][0]["logprobs"]["top_logprobs"], json({{{"</s>", -2.0}}}));
    QCOMPARE(chunks[2]["choices"][0]["finish_reason"], json("stop"));
}

std::pair<json, std::vector<json>> TestOpenaiLogprobs::serve(const GenerationRequest& r) {
    EngineConfig config;
    config.kv_dtype = KvDtype::F32;
    config.num_blocks = 64;
    config.max_num_batched_tokens = 8; // the prompt in several chunks
    Engine engine(config, model_);
    const ResponseHeader header{r.api, "id", "stories", 1};
    const auto prompt_tokens = static_cast<std::uint32_t>(r.prompt.size());
    ResponseCollector collector(header, r.params.n, prompt_tokens, choice_content(r, *tok_));
    ResponseStream stream(header, r.params.n, false, prompt_tokens, choice_content(r, *tok_));
    std::string sse = stream.begin();
    engine.set_output_callback([&](const RequestOutput& out) {
        collector.on_output(out);
        sse += stream.on_output(out);
    });
    engine.add_request(r.prompt, r.params).id();
    for (int i = 0; i < 1000 && engine.has_work(); ++i)
        engine.step();
    [&] { QVERIFY(collector.done() && !collector.error()); }();
    return {json::parse(collector.to_json().dump()), chunks_of(sse + stream.end())};
}

void TestOpenaiLogprobs::echo_of_token_ids_equals_teacher_forcing_data() {
    QTest::addColumn<int>("max_tokens");
    QTest::newRow("max_tokens 0: the prompt alone") << 0;
    QTest::newRow("max_tokens 3") << 3;
}

// The acceptance check, server side: random token ids, echo,
// logprobs 5, tokens as ids: every prompt position's log-probability and
// top-1 token are teacher forcing's; the stream says the same.
void TestOpenaiLogprobs::echo_of_token_ids_equals_teacher_forcing() {
    QFETCH(int, max_tokens);
    std::mt19937 rng(7);
    std::uniform_int_distribution<TokenId> draw(3, tok_->n_tokens() - 1);
    std::vector<TokenId> ids(24);
    for (TokenId& t : ids)
        t = draw(rng);
    const GenerationRequest r = parse_completion_request({{"prompt", ids},
                                                          {"echo", true},
                                                          {"max_tokens", max_tokens},
                                                          {"logprobs", 5},
                                                          {"temperature", 0},
                                                          {"return_tokens_as_token_ids", true}},
                                                         served_);
    const auto [body, chunks] = serve(r);
    const json& choice = body["choices"][0];
    const json& l = choice["logprobs"];
    const std::size_t shown = ids.size() + static_cast<std::size_t>(max_tokens);
    QCOMPARE(l["tokens"].size(), shown);
    QVERIFY(l["token_logprobs"][0].is_null() && l["top_logprobs"][0].is_null());
    QCOMPARE(choice["text"].get<std::string>().rfind(tok_->decode(ids), 0), std::size_t{0});
    QCOMPARE(body["usage"]["completion_tokens"], json(std::max(max_tokens, 1)));

    const std::size_t vocab = model_->config().vocab_size;
    std::vector<TokenId> all = ids;
    for (std::size_t i = ids.size(); i < shown; ++i)
        all.push_back(std::stoi(l["tokens"][i].get<std::string>().substr(9)));
    const std::vector<float> logits = teacher_forced_logits(*model_, all, KvDtype::F32, 16, 1);
    for (std::size_t i = 1; i < shown; ++i) {
        const std::vector<double> ref = log_softmax(std::span(logits).subspan((i - 1) * vocab, vocab));
        const std::string name = "token_id:" + std::to_string(all[i]);
        QCOMPARE(l["tokens"][i], json(name));
        QVERIFY2(std::abs(l["token_logprobs"][i].get<double>() - ref[static_cast<std::size_t>(all[i])]) < 1e-3,
                 qPrintable(QStringLiteral("position %1").arg(i)));
        const json& top = l["top_logprobs"][i];
        QVERIFY(top.size() == 5 || (top.size() == 6 && top.contains(name)));
        const std::string best = "token_id:" + std::to_string(argmax(ref));
        QVERIFY2(top.contains(best), qPrintable(QStringLiteral("position %1").arg(i)));
        QVERIFY(std::abs(top[best].get<double>() - ref[argmax(ref)]) < 1e-3);
    }
    // The stream, concatenated, says the same.
    json tokens = json::array(), logprobs = json::array(), offsets = json::array();
    std::string text;
    for (const json& c : chunks) {
        const json& sc = c["choices"][0];
        text += sc["text"].get<std::string>();
        if (sc["logprobs"].is_null())
            continue;
        for (const char* key : {"tokens", "token_logprobs", "text_offset"})
            for (const json& v : sc["logprobs"][key])
                (std::string(key) == "tokens" ? tokens : std::string(key) == "token_logprobs" ? logprobs : offsets)
                    .push_back(v);
    }
    QCOMPARE(text, choice["text"].get<std::string>());
    QCOMPARE(tokens, l["tokens"]);
    QCOMPARE(logprobs, l["token_logprobs"]);
    QCOMPARE(offsets, l["text_offset"]);
}

void TestOpenaiLogprobs::chat_logprobs_from_the_engine() {
    const GenerationRequest r = parse_chat_request({{"messages", {{{"role", "user"}, {"content", "Once upon"}}}},
                                                    {"logprobs", true},
                                                    {"top_logprobs", 2},
                                                    {"max_tokens", 6},
                                                    {"temperature", 0}},
                                                   served_);
    const auto [body, chunks] = serve(r);
    const json& content = body["choices"][0]["logprobs"]["content"];
    QCOMPARE(content.size(), body["usage"]["completion_tokens"].get<std::size_t>());
    for (const json& entry : content) {
        QCOMPARE(entry["top_logprobs"].size(), 2u);
        QCOMPARE(entry["top_logprobs"][0]["token"], entry["token"]); // greedy: the most likely came
        QCOMPARE(entry["top_logprobs"][0]["logprob"], entry["logprob"]);
        QVERIFY(entry["logprob"].get<double>() <= 0);
        QVERIFY(entry["bytes"].is_array());
    }
    json streamed = json::array();
    for (const json& c : chunks)
        if (!c["choices"][0]["logprobs"].is_null())
            for (const json& entry : c["choices"][0]["logprobs"]["content"])
                streamed.push_back(entry);
    QCOMPARE(streamed, content);
}

QTEST_GUILESS_MAIN(TestOpenaiLogprobs)
#include "test_openai_logprobs.moc"
