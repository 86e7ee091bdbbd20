// Chat templates run as Jinja: the real templates of tests/data/chat_templates
// (README.md there says where each comes from) rendered by ChatTemplate on
// a set of conversations, compared byte for byte with Python's jinja2
// rendering the same template with the same variables, in Hugging Face's
// environment (render_chat_templates.py). jinja2 is an independent
// implementation; the comparison is skipped, saying so, only where Python
// or its jinja2 is missing (installer/deps.sh --test installs
// python3-jinja2, so CI runs it).
#include <QtTest>

#include <QProcess>
#include <QStandardPaths>
#include <QTemporaryDir>

#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/core/error.h"
#include "engine/tokenizer/chat_template.h"

using namespace kvscope;
// Ordered, as Python's dicts are: tojson writes the keys in the messages' order.
using json = nlohmann::ordered_json;

namespace {

// 2026-01-01 00:00 UTC: the instant strftime_now formats on both sides.
constexpr std::time_t kNow = 1767225600;

// How a template is expected to take a conversation (ChatTemplate decides
// it from probe renders; the test states it, and builds jinja2's messages
// from it, so a wrong decision shows as a different render).
enum class Adaptation { none, typed_content, system_in_user };

struct TemplateFile {
    const char* file;
    const char* bos;
    const char* eos;
    ChatFamily family;
    Adaptation adaptation = Adaptation::none;
    bool thinking = false;  // takes enable_thinking
    bool reasoning = false; // takes reasoning_effort
};

const TemplateFile kTemplates[] = {
    {"meta-llama-Llama-3.1-8B-Instruct.jinja", "<|begin_of_text|>", "<|eot_id|>", ChatFamily::llama3},
    {"meta-llama-Llama-3.2-3B-Instruct.jinja", "<|begin_of_text|>", "<|eot_id|>", ChatFamily::llama3},
    {"Qwen-Qwen2.5-7B-Instruct.jinja", "", "<|im_end|>", ChatFamily::chatml},
    {"Qwen-Qwen3-0.6B.jinja", "", "<|im_end|>", ChatFamily::chatml, Adaptation::none, true},
    {"google-gemma-3-1b-it.jinja", "<bos>", "<eos>", ChatFamily::gemma, Adaptation::typed_content},
    {"google-gemma-3-270m-it.jinja", "<bos>", "<eos>", ChatFamily::gemma},
    {"google-gemma-2-2b-it.jinja", "<bos>", "<eos>", ChatFamily::gemma, Adaptation::system_in_user},
    {"microsoft-Phi-4-mini-instruct.jinja", "<|endoftext|>", "<|endoftext|>", ChatFamily::none},
    {"HuggingFaceTB-SmolLM3-3B.jinja", "", "<|im_end|>", ChatFamily::chatml, Adaptation::none, true},
    {"mistralai-Mistral-Nemo-Instruct-2407.jinja", "<s>", "</s>", ChatFamily::mistral},
    {"Mistral-Small-3.2-24B-Instruct-2506.jinja", "<s>", "</s>", ChatFamily::mistral},
    {"openai-gpt-oss-120b.jinja", "<|startoftext|>", "<|return|>", ChatFamily::none, Adaptation::none, false,
     true},
    {"kvscope-features.jinja", "<s>", "</s>", ChatFamily::none},
};

const TemplateFile& named(std::string_view file) {
    for (const TemplateFile& t : kTemplates)
        if (file == t.file)
            return t;
    throw Error("no template file " + std::string(file) + " in kTemplates");
}

struct Conversation {
    std::string name;
    std::vector<ChatMessage> messages;
    ChatRenderOptions options;
};

ChatRenderOptions options(bool generation_prompt) {
    ChatRenderOptions o;
    o.add_generation_prompt = generation_prompt;
    o.now = kNow;
    return o;
}

std::vector<Conversation> conversations(const TemplateFile& t) {
    const ChatMessage system{"system", "You are a helpful assistant."};
    const std::vector<ChatMessage> multi{system,
                                         {"user", "Hello"},
                                         {"assistant", "Hi there"},
                                         {"user", "Who are you?"},
                                         {"assistant", "   I am an assistant   "},
                                         {"user", "Another question"}};
    std::vector<Conversation> c = {
        {"system+user", {system, {"user", "Hello!"}}, options(true)},
        {"user", {{"user", "What is 2+2?"}}, options(true)},
        {"multi-turn", multi, options(true)},
        {"multi-turn, no generation prompt",
         {{"user", "Hi"}, {"assistant", "Hello! How can I help?"}, {"user", "Tell me a joke."}, {"assistant", "No."}},
         options(false)},
        {"markup, quotes, newlines, non-ASCII",
         {system,
          {"user", "Use {{ braces }} and {% tags %}, 'single' and \"double\" quotes,\na new line, a\ttab, "
                   "Gr\xC3\xBC\xC3\x9F" "e, \xE6\x9D\xB1\xE4\xBA\xAC \xF0\x9F\x9A\x80"}},
         options(true)},
        {"two user turns in a row", {{"user", "a"}, {"user", "b"}}, options(true)},
    };
    Conversation dated{"system+user, date_string", {system, {"user", "Hello!"}}, options(true)};
    dated.options.date = "01 Jan 2025";
    c.push_back(dated);
    if (t.thinking)
        for (const bool on : {false, true}) {
            const std::string tag = on ? ", thinking on" : ", thinking off";
            Conversation a{"system+user" + tag, {system, {"user", "Hello!"}}, options(true)};
            a.options.enable_thinking = on;
            Conversation b{"multi-turn with reasoning" + tag,
                           {{"user", "What is 2+2?"},
                            {"assistant", "<think>\nEasy: 2+2 is 4.\n</think>\n\nIt is 4."},
                            {"user", "And 3+3?"}},
                           options(true)};
            b.options.enable_thinking = on;
            c.push_back(a);
            c.push_back(b);
        }
    if (t.reasoning) {
        Conversation high{"system+user, reasoning high", {system, {"user", "Hello!"}}, options(true)};
        high.options.reasoning_effort = "high";
        c.push_back(high);
    }
    return c;
}

std::string read_text(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in)
        throw Error("cannot read " + path);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

std::string template_path(const char* file) { return std::string(KVSCOPE_CHAT_TEMPLATES) + "/" + file; }

// The messages Hugging Face's apply_chat_template would get, adapted as
// the template is expected to need.
json jinja2_messages(const std::vector<ChatMessage>& messages, Adaptation adaptation) {
    std::vector<ChatMessage> m = messages;
    if (adaptation == Adaptation::system_in_user && !m.empty() && m[0].role == "system") {
        const std::string system = m[0].content;
        m.erase(m.begin());
        for (ChatMessage& turn : m)
            if (turn.role == "user") {
                turn.content = system + "\n\n" + turn.content;
                break;
            }
    }
    json out = json::array();
    for (const ChatMessage& turn : m) {
        json content = turn.content;
        if (adaptation == Adaptation::typed_content)
            content = json::array({{{"type", "text"}, {"text", turn.content}}});
        out.push_back({{"role", turn.role}, {"content", content}});
    }
    return out;
}

json jinja2_case(const TemplateFile& t, const Conversation& c) {
    json variables = {{"messages", jinja2_messages(c.messages, t.adaptation)},
                      {"tools", nullptr},
                      {"add_generation_prompt", c.options.add_generation_prompt},
                      {"bos_token", t.bos},
                      {"eos_token", t.eos}};
    if (!c.options.date.empty())
        variables["date_string"] = c.options.date;
    if (c.options.enable_thinking)
        variables["enable_thinking"] = *c.options.enable_thinking;
    if (!c.options.reasoning_effort.empty())
        variables["reasoning_effort"] = c.options.reasoning_effort;
    return {{"template", read_text(template_path(t.file))}, {"variables", variables}, {"now", kNow}};
}

// One row: a template, a conversation, what jinja2 gave.
struct Row {
    const TemplateFile* t;
    Conversation c;
    json expected; // {"text": ...} or {"error": ...}
};

// A Python with jinja2: the one on PATH, else Debian's (python3-jinja2
// installs into it, and PATH may name another, such as pyenv's).
QString python_with_jinja2() {
    for (const QString& python : {QStandardPaths::findExecutable(QStringLiteral("python3")),
                                  QStringLiteral("/usr/bin/python3")}) {
        if (python.isEmpty())
            continue;
        QProcess p;
        p.start(python, {"-c", "import jinja2"});
        if (p.waitForFinished(60000) && p.exitStatus() == QProcess::NormalExit && p.exitCode() == 0)
            return python;
    }
    return {};
}

// Where two renders part, with what each has from there.
std::string first_difference(const std::string& ours, const std::string& jinja2) {
    std::size_t at = 0;
    while (at < ours.size() && at < jinja2.size() && ours[at] == jinja2[at])
        ++at;
    return "the renders differ at byte " + std::to_string(at) + ":\nkvscope: " + ours.substr(at, 200) +
           "\njinja2:  " + jinja2.substr(at, 200);
}

} // namespace

Q_DECLARE_METATYPE(const Row*)

class TestChatTemplateJinja : public QObject {
    Q_OBJECT
private slots:
    void initTestCase();
    void each_template_runs_as_jinja();
    void renders_as_jinja2_does_data();
    void renders_as_jinja2_does();
    void template_kwargs_change_the_render();
    void refusals_are_the_templates_words();

private:
    // Each template parsed once: minja's parser takes up to 0.15 s (gpt-oss).
    const ChatTemplate& chat(const TemplateFile& t);

    std::map<std::string, ChatTemplate> chats_;
    std::vector<Row> rows_;
    QString python_; // empty: no Python with jinja2 here
};

const ChatTemplate& TestChatTemplateJinja::chat(const TemplateFile& t) {
    auto it = chats_.find(t.file);
    if (it == chats_.end())
        it = chats_.emplace(t.file, ChatTemplate(read_text(template_path(t.file)), t.bos, t.eos)).first;
    return it->second;
}

// Every case through jinja2 at once: one Python process.
void TestChatTemplateJinja::initTestCase() {
    for (const TemplateFile& t : kTemplates)
        for (const Conversation& c : conversations(t))
            rows_.push_back({&t, c, json()});
    python_ = python_with_jinja2();
    if (python_.isEmpty())
        return;
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const QString input = dir.filePath(QStringLiteral("cases.json"));
    json cases = json::array();
    for (const Row& r : rows_)
        cases.push_back(jinja2_case(*r.t, r.c));
    std::ofstream(input.toStdString()) << json{{"cases", cases}}.dump();
    QProcess p;
    p.start(python_, {QStringLiteral(KVSCOPE_RENDER_CHAT_TEMPLATES), input});
    QVERIFY(p.waitForFinished(120000));
    QVERIFY2(p.exitCode() == 0, p.readAllStandardError().constData());
    const json results = json::parse(p.readAllStandardOutput().toStdString());
    QCOMPARE(results.size(), rows_.size());
    for (std::size_t i = 0; i < rows_.size(); ++i)
        rows_[i].expected = results[i];
}

void TestChatTemplateJinja::each_template_runs_as_jinja() {
    for (const TemplateFile& t : kTemplates) {
        const std::string d = chat(t).description();
        QVERIFY2(chat(t).renderer() == ChatRenderer::jinja, (std::string(t.file) + ": " + d).c_str());
        QCOMPARE(chat(t).family(), t.family);
        QCOMPARE(d.find("text parts") != std::string::npos, t.adaptation == Adaptation::typed_content);
        QCOMPARE(d.find("system text in front") != std::string::npos, t.adaptation == Adaptation::system_in_user);
    }
}

void TestChatTemplateJinja::renders_as_jinja2_does_data() {
    QTest::addColumn<const Row*>("row");
    for (const Row& r : rows_)
        QTest::newRow((std::string(r.t->file) + ": " + r.c.name).c_str()) << &r;
}

void TestChatTemplateJinja::renders_as_jinja2_does() {
    if (python_.isEmpty())
        QSKIP("Python's jinja2 is missing (Debian's python3-jinja2, which installer/deps.sh --test installs): "
              "kvscope's renders cannot be compared with jinja2's");
    QFETCH(const Row*, row);
    std::optional<std::string> text, error;
    try {
        text = chat(*row->t).render(row->c.messages, row->c.options);
    } catch (const Error& e) {
        error = e.what();
    }
    if (row->expected.contains("error")) {
        const std::string why = row->expected["error"];
        QVERIFY2(error, ("jinja2 refused (" + why + "), kvscope rendered:\n" + text.value_or("")).c_str());
        QVERIFY2(error->find(why) != std::string::npos, (*error + " | jinja2: " + why).c_str());
        return;
    }
    QVERIFY2(!error, error.value_or("").c_str());
    const std::string expected = row->expected["text"];
    QVERIFY2(*text == expected, first_difference(*text, expected).c_str());
}

// The options reach the template: Qwen3 closes an empty <think> block when
// thinking is off; gpt-oss writes the effort; Llama 3.2 dates its system
// block with strftime_now unless date_string is given.
void TestChatTemplateJinja::template_kwargs_change_the_render() {
    const std::vector<ChatMessage> hi{{"user", "Hi"}};
    const ChatTemplate& qwen3 = chat(named("Qwen-Qwen3-0.6B.jinja"));
    ChatRenderOptions o;
    QVERIFY(qwen3.render(hi, o).ends_with("<|im_start|>assistant\n"));
    o.enable_thinking = false;
    QVERIFY(qwen3.render(hi, o).ends_with("<|im_start|>assistant\n<think>\n\n</think>\n\n"));

    const ChatTemplate& oss = chat(named("openai-gpt-oss-120b.jinja"));
    o = {};
    o.reasoning_effort = "low";
    QVERIFY(oss.render(hi, o).find("Reasoning: low") != std::string::npos);
    o.reasoning_effort = {};
    QVERIFY(oss.render(hi, o).find("Reasoning: medium") != std::string::npos);

    const ChatTemplate& llama32 = chat(named("meta-llama-Llama-3.2-3B-Instruct.jinja"));
    o = {};
    o.now = kNow + 12 * 3600; // noon: the same day in every time zone UTC-12..+11
    QVERIFY(llama32.render(hi, o).find("Today Date: 01 Jan 2026\n") != std::string::npos);
    o.date = "26 Jul 2024";
    QVERIFY(llama32.render(hi, o).find("Today Date: 26 Jul 2024\n") != std::string::npos);
}

// raise_exception's message comes back as the kvscope::Error's, the same
// whatever the template's nesting.
void TestChatTemplateJinja::refusals_are_the_templates_words() {
    const std::vector<ChatMessage> two_users{{"user", "a"}, {"user", "b"}};
    const ChatTemplate& nemo = chat(named("mistralai-Mistral-Nemo-Instruct-2407.jinja"));
    QVERIFY_THROWS_EXCEPTION(Error, nemo.render(two_users));
    try {
        nemo.render(two_users);
    } catch (const Error& e) {
        QCOMPARE(std::string(e.what()),
                 std::string("the chat template refuses the conversation: After the optional system message, "
                             "conversation roles must alternate user/assistant/user/assistant/..."));
    }
}

QTEST_GUILESS_MAIN(TestChatTemplateJinja)
#include "test_chat_template_jinja.moc"
