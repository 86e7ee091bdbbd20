// The server chats through the template a model file carries, end to end
// over HTTP as a client sees it: a synthetic model of each new architecture
// (cut to one layer) with its family's real template from
// tests/data/chat_templates, served in-process (HttpServer over an
// EngineService, as `kvscope-cli serve` wires them). /tokenize renders a
// conversation, /detokenize shows the text the template wrote (its turn
// markers, the generation prompt, what chat_template_kwargs changed), and
// /v1/chat/completions answers with a prompt of exactly those tokens.
// chat_template_kwargs and reasoning_effort of the wrong type or value, or
// a key kvscope cannot pass, answer 400.
#include <QtTest>

#include <QTemporaryDir>

#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "engine/model/synthetic_model.h"
#include "engine/presets/model_presets.h"
#include "support/served_model.h"

using namespace kvscope;
using kvscope::test::ServedModel;
using json = nlohmann::json;

namespace {

std::string template_text(const QString& file) {
    std::ifstream in(QStringLiteral(KVSCOPE_CHAT_TEMPLATES "/%1").arg(file).toStdString(), std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

// One layer, a 512-token vocabulary and a narrow FFN: the template, not the
// model, is under test, and every architectural feature stays.
std::string make_model(const QTemporaryDir& dir, const QString& preset, const QString& template_file) {
    const std::string path = dir.filePath(preset + ".gguf").toStdString();
    const ModelGeometry g =
        cut_geometry(find_model_preset(preset.toStdString()), {.layers = 1, .vocab = 512, .ffn = 64});
    write_synthetic_model(g, GgmlType::F16, 1, path, template_text(template_file));
    return path;
}

// The served engine: the CPU, a small pool (the prompts are short).
EngineConfig small_engine() {
    EngineConfig c;
    c.backend = Backend::Cpu;
    c.num_blocks = 64;
    return c;
}

// The text /tokenize rendered for `body`, as /detokenize gives it back.
// The placeholder vocabulary has no piece for a space: it goes in as the
// bytes of SentencePiece's "▁", which come back as that character.
std::string rendered(ServedModel& served, const json& body) {
    const auto [status, ids] = served.post("/tokenize", body);
    if (status != 200)
        return "/tokenize answered " + std::to_string(status) + ": " + ids.dump();
    const std::string text = served.post("/detokenize", {{"tokens", ids["tokens"]}}).second["prompt"].get<std::string>();
    return QString::fromStdString(text).replace(QChar(0x2581), QLatin1Char(' ')).toStdString();
}

// /tokenize's count for `body`.
std::size_t prompt_tokens(ServedModel& served, const json& body) {
    return served.post("/tokenize", body).second["count"].get<std::size_t>();
}

// A system and a user message, and `extra` fields.
json conversation(const json& extra = json::object()) {
    json body = {{"messages", {{{"role", "system"}, {"content", "Be brief."}}, {{"role", "user"}, {"content", "Hello!"}}}}};
    body.update(extra);
    return body;
}

} // namespace

class TestChatTemplateServing : public QObject {
    Q_OBJECT

private slots:
    void chats_through_the_files_template_data();
    void chats_through_the_files_template();
    void template_arguments_accepted();
    void template_arguments_refused();

private:
    QTemporaryDir dir_;
};

void TestChatTemplateServing::chats_through_the_files_template_data() {
    QTest::addColumn<QString>("preset");
    QTest::addColumn<QString>("file");
    QTest::addColumn<QString>("request");  // fields added to the chat request (template arguments)
    QTest::addColumn<QString>("marker");   // in the rendered prompt
    QTest::addColumn<QString>("ending");   // the rendered prompt ends with it: the generation prompt
    // Gemma has no system role: the template puts the system text in the first user turn.
    QTest::newRow("gemma3") << "gemma3-270m" << "google-gemma-3-270m-it.jinja" << "{}"
                            << "<start_of_turn>user\nBe brief.\n\nHello!<end_of_turn>\n"
                            << "<start_of_turn>model\n";
    QTest::newRow("gemma2") << "gemma2-2b" << "google-gemma-2-2b-it.jinja" << "{}"
                            << "<start_of_turn>user\nBe brief.\n\nHello!<end_of_turn>\n"
                            << "<start_of_turn>model\n";
    QTest::newRow("phi3") << "phi-4-mini" << "microsoft-Phi-4-mini-instruct.jinja" << "{}"
                          << "<|system|>Be brief.<|end|><|user|>Hello!<|end|>" << "<|assistant|>";
    QTest::newRow("qwen3") << "qwen3-0.6b" << "Qwen-Qwen3-0.6B.jinja" << "{}"
                           << "<|im_start|>user\nHello!<|im_end|>\n" << "<|im_start|>assistant\n";
    // Qwen3's template writes an empty think block to answer without reasoning.
    QTest::newRow("qwen3, no thinking")
        << "qwen3-0.6b" << "Qwen-Qwen3-0.6B.jinja" << R"({"chat_template_kwargs": {"enable_thinking": false}})"
        << "<|im_start|>user\nHello!<|im_end|>\n" << "<|im_start|>assistant\n<think>\n\n</think>\n\n";
    QTest::newRow("smollm3, no thinking")
        << "smollm3-3b" << "HuggingFaceTB-SmolLM3-3B.jinja" << R"({"chat_template_kwargs": {"enable_thinking": false}})"
        << "Reasoning Mode: /no_think\n" << "<|im_start|>assistant\n<think>\n\n</think>\n";
    // gpt-oss is not an architecture kvscope runs yet: its template on a llama.
    QTest::newRow("gpt-oss, low effort")
        << "llama-42m" << "openai-gpt-oss-120b.jinja" << R"({"chat_template_kwargs": {"reasoning_effort": "low"}})"
        << "Reasoning: low\n" << "<|start|>assistant";
}

void TestChatTemplateServing::chats_through_the_files_template() {
    QFETCH(QString, preset);
    QFETCH(QString, file);
    QFETCH(QString, request);
    QFETCH(QString, marker);
    QFETCH(QString, ending);
    QVERIFY(dir_.isValid());
    ServedModel served(make_model(dir_, preset, file), "synthetic", small_engine(), 4);
    const json body = conversation(json::parse(request.toStdString()));

    const std::string text = rendered(served, body);
    QVERIFY2(text.find(marker.toStdString()) != std::string::npos, text.c_str());
    QVERIFY2(text.ends_with(ending.toStdString()), text.c_str());

    json chat = body;
    chat.update({{"max_tokens", 2}, {"temperature", 0}});
    const auto [status, reply] = served.post("/v1/chat/completions", chat);
    QVERIFY2(status == 200, reply.dump().c_str());
    QCOMPARE(reply["choices"][0]["message"]["role"], json("assistant"));
    // The engine was given the tokens of the rendered text, template arguments included.
    QCOMPARE(reply["usage"]["prompt_tokens"].get<std::size_t>(), prompt_tokens(served, body));
}

void TestChatTemplateServing::template_arguments_accepted() {
    ServedModel served(make_model(dir_, QStringLiteral("llama-42m"), QStringLiteral("openai-gpt-oss-120b.jinja")), "synthetic",
                       small_engine(), 4);
    // gpt-oss's template writes today's date: left out, so that renders a
    // midnight apart still compare.
    const auto render = [&served](const json& fields) {
        std::string text = rendered(served, conversation(fields));
        const std::size_t at = text.find("Current date: ");
        return at == std::string::npos ? text : text.erase(at, text.find('\n', at) - at);
    };
    const std::string by_default = render(json::object());
    QVERIFY2(by_default.find("Reasoning: medium\n") != std::string::npos, by_default.c_str()); // the template's default
    // A null entry is the template's default.
    QCOMPARE(render({{"chat_template_kwargs", {{"reasoning_effort", nullptr}}}}), by_default);
    // OpenAI's top-level field is the same argument; both may be given when they agree.
    const std::string high = render({{"chat_template_kwargs", {{"reasoning_effort", "high"}}}});
    QVERIFY2(high.find("Reasoning: high\n") != std::string::npos, high.c_str());
    QCOMPARE(render({{"reasoning_effort", "high"}}), high);
    QCOMPARE(render({{"reasoning_effort", "high"}, {"chat_template_kwargs", {{"reasoning_effort", "high"}}}}), high);
    // An argument the template does not read changes nothing.
    QCOMPARE(render({{"chat_template_kwargs", {{"enable_thinking", false}}}}), by_default);
    // A conversation the context policy fits (user last) and any other list take them alike.
    json two_users = conversation({{"reasoning_effort", "low"}, {"max_tokens", 1}});
    two_users["messages"].push_back({{"role", "user"}, {"content", "Again?"}});
    const auto [status, reply] = served.post("/v1/chat/completions", two_users);
    QVERIFY2(status == 200, reply.dump().c_str());
    QCOMPARE(reply["usage"]["prompt_tokens"].get<std::size_t>(), prompt_tokens(served, two_users));
}

void TestChatTemplateServing::template_arguments_refused() {
    ServedModel served(make_model(dir_, QStringLiteral("llama-15m"), QStringLiteral("Qwen-Qwen3-0.6B.jinja")), "synthetic",
                       small_engine(), 4);
    struct Refusal {
        json fields;
        const char* param;
        const char* message; // a substring of it
    };
    const Refusal refusals[] = {
        {{{"chat_template_kwargs", "enable_thinking"}}, "chat_template_kwargs",
         "'chat_template_kwargs' must be an object, got string"},
        {{{"chat_template_kwargs", {{"enable_thinking", "false"}}}}, "chat_template_kwargs",
         "'chat_template_kwargs.enable_thinking' must be a boolean, got string"},
        {{{"chat_template_kwargs", {{"reasoning_effort", 2}}}}, "chat_template_kwargs",
         "'chat_template_kwargs.reasoning_effort' must be a string, got number"},
        {{{"chat_template_kwargs", {{"reasoning_effort", "extreme"}}}}, "chat_template_kwargs",
         R"('chat_template_kwargs.reasoning_effort' must be "low", "medium" or "high", got "extreme")"},
        {{{"chat_template_kwargs", {{"date_string", 26}}}}, "chat_template_kwargs",
         "'chat_template_kwargs.date_string' must be a string, got number"},
        {{{"chat_template_kwargs", {{"thinking", true}}}}, "chat_template_kwargs",
         "'chat_template_kwargs.thinking' is not a template argument kvscope passes"},
        {{{"reasoning_effort", true}}, "reasoning_effort", "'reasoning_effort' must be a string, got boolean"},
        {{{"reasoning_effort", "low"}, {"chat_template_kwargs", {{"reasoning_effort", "high"}}}}, "reasoning_effort",
         R"('reasoning_effort' is "low" but 'chat_template_kwargs.reasoning_effort' is "high")"},
    };
    for (const Refusal& r : refusals) {
        for (const char* path : {"/v1/chat/completions", "/tokenize"}) {
            const auto [status, reply] = served.post(path, conversation(r.fields));
            const std::string what = std::string(path) + " " + r.fields.dump() + " -> " + reply.dump();
            QVERIFY2(status == 400, what.c_str());
            QVERIFY2(reply["error"]["param"] == r.param, what.c_str());
            QVERIFY2(reply["error"]["message"].get<std::string>().find(r.message) != std::string::npos, what.c_str());
        }
    }
}

QTEST_GUILESS_MAIN(TestChatTemplateServing)
#include "test_chat_template_serving.moc"
