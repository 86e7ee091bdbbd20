// /v1/chat/completions returns a reply's reasoning apart, as vLLM and
// llama.cpp do: `reasoning_content` beside `content` in the message, and
// streamed as delta.reasoning_content chunks before delta.content ones.
// - The response assembly (net/serve/openai_response) with scripted engine
//   outputs: harmony and <think> replies whose markers are cut between
//   outputs, a reply cut short inside its reasoning, n = 2, and a model
//   without a reasoning format (no such field, the text unchanged).
// - The request side: the mode from the template and the prompt, and an
//   assistant message's reasoning_content reaching the template (Qwen3's
//   writes it into the last assistant turn), with the o200k_harmony subset
//   vocabulary kept in tests/data.
// - End to end over HTTP: a synthetic model served with a template whose
//   generation prompt opens <think>, so all it says is reasoning (sampled
//   with a seed, so the text equals /v1/completions' for the same prompt
//   ids; greedy, this random model repeats the prompt's last newline).
#include <QtTest>

#include <QTemporaryDir>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/model/gguf_file.h"
#include "engine/model/synthetic_model.h"
#include "engine/presets/model_presets.h"
#include "engine/tokenizer/vocabulary.h"
#include "net/serve/openai_request.h"
#include "net/serve/openai_response.h"
#include "support/sse_events.h"
#include "support/served_model.h"

using namespace kvscope;
using namespace kvscope::serve;
using json = nlohmann::json;

using kvscope::test::events_of;

namespace {

constexpr ReasoningMode kHarmony{ReasoningFormat::harmony, false};
constexpr ReasoningMode kThinkOpened{ReasoningFormat::think, true};

std::string template_text(const char* file) {
    std::ifstream in(std::string(KVSCOPE_CHAT_TEMPLATES "/") + file, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

// ChatML whose generation prompt opens the reasoning, as Qwen3's thinking
// models' templates do (theirs name </think> where they split past replies).
const std::string kOpensThink = "{# </think> #}{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n"
                                "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n<think>\n"
                                "{% endif %}";


RequestOutput output(std::uint32_t index, std::string text, std::optional<FinishReason> finish = std::nullopt) {
    return {7, index, std::move(text), {5}, finish, {}};
}

// Each sample's deltas, joined per field; every delta has text in one of
// them or is the role's; the markers never show.
struct Streamed {
    std::string reasoning[2], content[2];
};
Streamed joined(const std::vector<json>& events) {
    Streamed s;
    for (const json& e : events) {
        if (!e.is_object() || e["choices"].empty())
            continue;
        const json& choice = e["choices"][0];
        const std::size_t i = choice["index"].get<std::size_t>();
        const json& delta = choice["delta"];
        if (delta.contains("reasoning_content"))
            s.reasoning[i] += delta["reasoning_content"].get<std::string>();
        if (delta.contains("content"))
            s.content[i] += delta["content"].get<std::string>();
    }
    return s;
}

ChoiceContent with_reasoning(ReasoningMode mode) {
    ChoiceContent c;
    c.reasoning = mode;
    return c;
}

const ResponseHeader kHeader{Api::Chat, "chatcmpl-r", "gpt-oss", 1};

} // namespace

class TestChatReasoning : public QObject {
    Q_OBJECT

private slots:
    void streamed_apart_with_markers_cut();
    void collected_apart();
    void without_a_format_nothing_changes();
    void mode_and_reasoning_from_the_request();
    void served_reply_that_starts_inside_its_reasoning();
};

void TestChatReasoning::streamed_apart_with_markers_cut() {
    ResponseStream stream(kHeader, 2, false, 3, with_reasoning(kHarmony));
    std::string sse = stream.begin();
    // Sample 0: a whole harmony reply, its markers cut across outputs.
    for (const char* piece : {"<|channel|>analy", "sis<|message|>Think", " more.<|e", "nd|><|start|>assis",
                              "tant<|channel|>final<|mess", "age|>The answer", "."})
        sse += stream.on_output(output(0, piece));
    sse += stream.on_output(output(0, "", FinishReason::Stop)); // <|return|>: sampled, no text
    // Sample 1: max_tokens inside the analysis, with a marker's start waiting.
    sse += stream.on_output(output(1, "<|channel|>analysis<|message|>Hm <|"));
    sse += stream.on_output(output(1, "en", FinishReason::Length));
    const std::vector<json> e = events_of(sse + stream.end());
    const Streamed s = joined(e);
    QCOMPARE(s.reasoning[0], std::string("Think more."));
    QCOMPARE(s.content[0], std::string("The answer."));
    QCOMPARE(s.reasoning[1], std::string("Hm <|en"));
    QCOMPARE(s.content[1], std::string());
    for (const json& event : e) {
        if (!event.is_object())
            continue;
        const json& delta = event["choices"][0]["delta"];
        QVERIFY2(delta.dump().find("<|channel|>") == std::string::npos, delta.dump().c_str());
        // A delta has reasoning, content, or (the role's, the finish's) nothing.
        const bool has_text = delta.contains("reasoning_content") ||
                              (delta.contains("content") && !delta["content"].get<std::string>().empty());
        QVERIFY2(has_text || delta.contains("role") || delta.empty(), event.dump().c_str());
    }
    // The reasoning streamed before the answer, in chunks of their own.
    QCOMPARE(e[2]["choices"][0]["delta"], json({{"reasoning_content", "Think"}}));
    QCOMPARE(e.back(), json("[DONE]"));
}

void TestChatReasoning::collected_apart() {
    ResponseCollector harmony(kHeader, 1, 3, with_reasoning(kHarmony));
    harmony.on_output(output(0, "<|channel|>analysis<|message|>Think.<|end|><|start|>assistant"));
    harmony.on_output(output(0, "<|channel|>final<|message|>Answer.", FinishReason::Stop));
    const json body = json::parse(harmony.to_json().dump());
    QCOMPARE(body["choices"][0]["message"],
             json({{"role", "assistant"}, {"content", "Answer."}, {"reasoning_content", "Think."}}));

    ResponseCollector think(kHeader, 1, 3, with_reasoning(kThinkOpened));
    think.on_output(output(0, "Let me see.\n</think>\n\nYes.", FinishReason::Stop));
    QCOMPARE(json::parse(think.to_json().dump())["choices"][0]["message"],
             json({{"role", "assistant"}, {"content", "Yes."}, {"reasoning_content", "Let me see."}}));

    // Cut short while reasoning: no answer yet.
    ResponseCollector cut(kHeader, 1, 3, with_reasoning(kThinkOpened));
    cut.on_output(output(0, "Still going", FinishReason::Length));
    const json cut_body = json::parse(cut.to_json().dump());
    QCOMPARE(cut_body["choices"][0]["message"],
             json({{"role", "assistant"}, {"content", ""}, {"reasoning_content", "Still going"}}));
    QCOMPARE(cut_body["choices"][0]["finish_reason"], json("length"));
}

void TestChatReasoning::without_a_format_nothing_changes() {
    const std::string text = "<think>x</think> <|channel|>y";
    ResponseCollector collector(kHeader, 1, 3);
    collector.on_output(output(0, text, FinishReason::Stop));
    QCOMPARE(json::parse(collector.to_json().dump())["choices"][0]["message"],
             json({{"role", "assistant"}, {"content", text}}));
    ResponseStream stream(kHeader, 1, false, 3);
    std::string sse = stream.begin();
    sse += stream.on_output(output(0, "<think>x</th"));
    const std::vector<json> e = events_of(sse);
    QCOMPARE(e[1]["choices"][0]["delta"], json({{"content", "<think>x</th"}}));
}

void TestChatReasoning::mode_and_reasoning_from_the_request() {
    const Tokenizer tok(read_vocabulary(GgufFile(KVSCOPE_TEST_DATA "/tokenizers/o200k-subset-vocab.gguf")));
    const ChatTemplate gpt_oss(template_text("openai-gpt-oss-120b.jinja"), "<|startoftext|>", "<|return|>");
    const ChatTemplate qwen3(template_text("Qwen-Qwen3-0.6B.jinja"), "", "<|im_end|>");
    const ChatTemplate opens(kOpensThink, "", "<|im_end|>");
    const auto served = [&tok](const ChatTemplate& t) { return ServedModel{"m", 4096, 4096, &tok, &t}; };
    const json hello = {{"messages", {{{"role", "user"}, {"content", "Hello"}}}}};
    QCOMPARE(parse_chat_request(hello, served(gpt_oss)).reasoning, kHarmony);
    QCOMPARE(parse_chat_request(hello, served(opens)).reasoning, kThinkOpened);
    QCOMPARE(parse_chat_request(hello, served(qwen3)).reasoning, (ReasoningMode{ReasoningFormat::think, false}));
    json no_thinking = hello;
    no_thinking["chat_template_kwargs"] = {{"enable_thinking", false}};
    QCOMPARE(parse_chat_request(no_thinking, served(qwen3)).reasoning, (ReasoningMode{ReasoningFormat::think, false}));

    // A client sends its last reply back with its reasoning: Qwen3's
    // template writes it into that (last) assistant turn.
    const json replied = {{"messages",
                           {{{"role", "user"}, {"content", "Hello"}},
                            {{"role", "assistant"}, {"content", "Hi!"}, {"reasoning_content", "A greeting."}}}}};
    const std::string prompt = tok.decode(parse_chat_request(replied, served(qwen3)).prompt);
    QVERIFY2(prompt.find("<|im_start|>assistant\n<think>\nA greeting.\n</think>\n\nHi!") != std::string::npos,
             prompt.c_str());
    // gpt-oss drops past analysis (its template renders `thinking` only
    // with tool calls): the reasoning is not there, and nothing fails.
    json again = replied;
    again["messages"].push_back({{"role", "user"}, {"content", "And?"}});
    const std::string oss = tok.decode(parse_chat_request(again, served(gpt_oss)).prompt);
    QVERIFY2(oss.find("A greeting.") == std::string::npos, oss.c_str());
    QVERIFY2(oss.find("<|channel|>final<|message|>Hi!<|end|>") != std::string::npos, oss.c_str());
    // Only a string, and only in an assistant message.
    json bad = replied;
    bad["messages"][1]["reasoning_content"] = 3;
    QVERIFY_THROWS_EXCEPTION(ApiError, parse_chat_request(bad, served(qwen3)));
    bad = hello;
    bad["messages"][0]["reasoning_content"] = "x";
    QVERIFY_THROWS_EXCEPTION(ApiError, parse_chat_request(bad, served(qwen3)));
}

// The reply of a model whose prompt opened <think> is reasoning until
// </think>; this one never writes it, so all of its text is reasoning.
void TestChatReasoning::served_reply_that_starts_inside_its_reasoning() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const std::string path = dir.filePath("opens-think.gguf").toStdString();
    const ModelGeometry g = cut_geometry(find_model_preset("qwen3-0.6b"), {.layers = 1, .vocab = 512, .ffn = 64});
    write_synthetic_model(g, GgmlType::F16, 1, path, kOpensThink);
    EngineConfig engine;
    engine.backend = Backend::Cpu;
    engine.num_blocks = 64;
    test::ServedModel served(path, "opens-think", engine, 2);

    const json messages = {{{"role", "user"}, {"content", "Hello"}}};
    const auto [tokenized, ids] = served.post("/tokenize", {{"messages", messages}});
    QCOMPARE(tokenized, 200);
    const auto [completed, completion] =
        served.post("/v1/completions", {{"prompt", ids["tokens"]}, {"max_tokens", 12}, {"temperature", 1}, {"seed", 7}});
    QCOMPARE(completed, 200);
    const std::string said = strip_whitespace(completion["choices"][0]["text"].get<std::string>());
    QVERIFY2(!said.empty(), completion.dump().c_str());

    const json chat = {{"messages", messages}, {"max_tokens", 12}, {"temperature", 1}, {"seed", 7}};
    const auto [status, reply] = served.post("/v1/chat/completions", chat);
    QVERIFY2(status == 200, reply.dump().c_str());
    QCOMPARE(reply["choices"][0]["message"], json({{"role", "assistant"}, {"content", ""}, {"reasoning_content", said}}));

    json streamed = chat;
    streamed["stream"] = true;
    const auto [stream_status, events] = served.post_text("/v1/chat/completions", streamed);
    QCOMPARE(stream_status, 200);
    const Streamed s = joined(events_of(events));
    QCOMPARE(s.reasoning[0], said);
    QCOMPARE(s.content[0], std::string());
}

QTEST_GUILESS_MAIN(TestChatReasoning)
#include "test_chat_reasoning.moc"
