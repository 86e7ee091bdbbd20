// A reply's reasoning apart from its answer (engine/chat/reasoning_split):
// gpt-oss's harmony channels and <think> blocks, whole and cut into pieces
// at every byte (no marker reaches either part, however a piece cuts it),
// replies that end inside their reasoning, replies that do not follow their
// format, the mode read from real templates and prompts, and a harmony
// reply decoded token by token from the o200k_harmony vocabulary kept in
// tests/data, as the engine streams it.
#include <QtTest>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "engine/chat/reasoning_split.h"
#include "engine/model/gguf_file.h"
#include "engine/tokenizer/chat_template.h"
#include "engine/tokenizer/stream_decoder.h"
#include "engine/tokenizer/tokenizer.h"
#include "engine/tokenizer/vocabulary.h"

using namespace kvscope;

namespace {

constexpr ReasoningMode kHarmony{ReasoningFormat::harmony, false};
constexpr ReasoningMode kThink{ReasoningFormat::think, false};
constexpr ReasoningMode kThinkOpened{ReasoningFormat::think, true};

const std::string kHarmonyReply = "<|channel|>analysis<|message|>User greets. Reply.<|end|>"
                                  "<|start|>assistant<|channel|>final<|message|>Hello! How can I help?";

std::string template_text(const char* file) {
    std::ifstream in(std::string(KVSCOPE_CHAT_TEMPLATES "/") + file, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

ReasoningText pushed(ReasoningMode mode, const std::vector<std::string_view>& pieces) {
    ReasoningSplitter splitter(mode);
    ReasoningText text;
    for (const std::string_view piece : pieces)
        text += splitter.push(piece);
    text += splitter.finish();
    return text;
}

const char* show(const ReasoningText& t) {
    static thread_local std::string shown;
    shown = "reasoning [" + t.reasoning + "] content [" + t.content + "]";
    return shown.c_str();
}

} // namespace

class TestReasoningSplit : public QObject {
    Q_OBJECT
private slots:
    void splits_whole_replies_data();
    void splits_whole_replies();
    void every_cut_gives_the_same_parts_data();
    void every_cut_gives_the_same_parts();
    void markers_wait_for_their_end();
    void format_from_the_template();
    void mode_from_the_prompt();
    void harmony_tokens_as_the_engine_decodes_them();
};

void TestReasoningSplit::splits_whole_replies_data() {
    QTest::addColumn<int>("format");
    QTest::addColumn<bool>("opened");
    QTest::addColumn<QString>("reply");
    QTest::addColumn<QString>("reasoning");
    QTest::addColumn<QString>("content");
    const int harmony = static_cast<int>(ReasoningFormat::harmony);
    const int think = static_cast<int>(ReasoningFormat::think);
    const int none = static_cast<int>(ReasoningFormat::none);
    QTest::newRow("harmony") << harmony << false << QString::fromStdString(kHarmonyReply) << "User greets. Reply."
                             << "Hello! How can I help?";
    // Commentary is a preamble the user may see; a tool call's header is no text.
    QTest::newRow("harmony, commentary")
        << harmony << false
        << "<|channel|>analysis<|message|>Plan.<|end|><|start|>assistant<|channel|>commentary<|message|>Checking. "
           "<|end|><|start|>assistant<|channel|>final<|message|>Done."
        << "Plan." << "Checking. Done.";
    QTest::newRow("harmony, header with recipient and constraint")
        << harmony << false << "<|channel|>commentary to=functions.f <|constrain|>json<|message|>{}" << "" << "{}";
    QTest::newRow("harmony, final only") << harmony << false << "<|channel|>final<|message|>Hi." << "" << "Hi.";
    // max_tokens inside the analysis, in a header, in a marker.
    QTest::newRow("harmony, ends in the analysis")
        << harmony << false << "<|channel|>analysis<|message|>Still thinking" << "Still thinking" << "";
    QTest::newRow("harmony, ends in a header")
        << harmony << false << "<|channel|>analysis<|message|>A.<|end|><|start|>assistant<|chan" << "A." << "";
    QTest::newRow("harmony, ends in <|end|>") << harmony << false << "<|channel|>analysis<|message|>A.<|en"
                                              << "A.<|en" << "";
    QTest::newRow("harmony, ends before any text") << harmony << false << "<|channel|>analy" << "" << "";
    // Not harmony: answer from where it departs.
    QTest::newRow("harmony format, plain reply") << harmony << false << "Hello <|channel|>x" << "" << "Hello <|channel|>x";
    QTest::newRow("harmony, no <|start|> after <|end|>")
        << harmony << false << "<|channel|>analysis<|message|>A.<|end|>B <|start|>" << "A." << "B <|start|>";
    QTest::newRow("harmony, header never ends")
        << harmony << false << "<|channel|>" + QString(300, QLatin1Char('x')) << ""
        << "<|channel|>" + QString(300, QLatin1Char('x'));
    // <think>: reasoning trimmed, the answer's leading whitespace dropped.
    QTest::newRow("think") << think << false << "<think>\nThe user says hi.\n</think>\n\nHello!"
                           << "The user says hi." << "Hello!";
    QTest::newRow("think, whitespace first") << think << false << "\n <think>Hm.</think>Hi" << "Hm." << "Hi";
    QTest::newRow("think, empty block") << think << false << "<think>\n\n</think>\n\nHello!" << "" << "Hello!";
    QTest::newRow("think, opened by the prompt") << think << true << "The user says hi.\n</think>\n\nHello!"
                                                 << "The user says hi." << "Hello!";
    QTest::newRow("think, ends in the reasoning")
        << think << false << "<think>\nStill thinking \n" << "Still thinking" << "";
    QTest::newRow("think, opened, ends in </think>") << think << true << "Hm </thi" << "Hm </thi" << "";
    QTest::newRow("think, no block: unchanged")
        << think << false << "  Hello <think>x</think> " << "" << "  Hello <think>x</think> ";
    QTest::newRow("think, ends before deciding") << think << false << " <thi" << "" << " <thi";
    QTest::newRow("think, only </think> closes") << think << false << "<think>a <think> b</think>c" << "a <think> b"
                                                 << "c";
    QTest::newRow("none: unchanged") << none << false << QString::fromStdString(kHarmonyReply) << ""
                                     << QString::fromStdString(kHarmonyReply);
}

void TestReasoningSplit::splits_whole_replies() {
    QFETCH(int, format);
    QFETCH(bool, opened);
    QFETCH(QString, reply);
    QFETCH(QString, reasoning);
    QFETCH(QString, content);
    const ReasoningMode mode{static_cast<ReasoningFormat>(format), opened};
    const ReasoningText split = split_reasoning(reply.toStdString(), mode);
    const ReasoningText expected{reasoning.toStdString(), content.toStdString()};
    QVERIFY2(split == expected, show(split));
}

void TestReasoningSplit::every_cut_gives_the_same_parts_data() {
    QTest::addColumn<int>("format");
    QTest::addColumn<bool>("opened");
    QTest::addColumn<QString>("reply");
    QTest::newRow("harmony") << static_cast<int>(ReasoningFormat::harmony) << false
                             << QString::fromStdString(kHarmonyReply + "<|end|><|start|>assistant<|channel|>final<|message|>!");
    QTest::newRow("think") << static_cast<int>(ReasoningFormat::think) << false
                           << "\n<think>\nA < B </ C.\n </think>\n\nYes: <think> stays.";
    QTest::newRow("think, opened") << static_cast<int>(ReasoningFormat::think) << true << " A.\n</think> B";
    QTest::newRow("think, plain") << static_cast<int>(ReasoningFormat::think) << false << " <thinking> is a tag";
}

// Two pieces cut at every byte, and one byte at a time, give what the whole
// reply gives: nothing of a marker leaks into a part before its end is seen.
void TestReasoningSplit::every_cut_gives_the_same_parts() {
    QFETCH(int, format);
    QFETCH(bool, opened);
    QFETCH(QString, reply);
    const ReasoningMode mode{static_cast<ReasoningFormat>(format), opened};
    const std::string text = reply.toStdString();
    const ReasoningText whole = split_reasoning(text, mode);
    QVERIFY2(!whole.content.empty(), show(whole));
    for (std::size_t cut = 0; cut <= text.size(); ++cut) {
        const std::string_view v = text;
        const ReasoningText two = pushed(mode, {v.substr(0, cut), v.substr(cut)});
        QVERIFY2(two == whole, (std::to_string(cut) + ": " + show(two)).c_str());
    }
    std::vector<std::string_view> bytes;
    for (std::size_t i = 0; i < text.size(); ++i)
        bytes.push_back(std::string_view(text).substr(i, 1));
    const ReasoningText one_by_one = pushed(mode, bytes);
    QVERIFY2(one_by_one == whole, show(one_by_one));
}

void TestReasoningSplit::markers_wait_for_their_end() {
    ReasoningSplitter harmony(kHarmony);
    QCOMPARE(harmony.push("<|channel|>analysis<|mess"), ReasoningText{});
    QCOMPARE(harmony.push("age|>Hi <"), (ReasoningText{"Hi ", ""}));
    QCOMPARE(harmony.push("|en"), ReasoningText{});
    QCOMPARE(harmony.push("d|><|start|>assistant<|channel|>final<|message|>Yes"), (ReasoningText{"", "Yes"}));
    QCOMPARE(harmony.finish(), ReasoningText{});

    // Whitespace before </think> waits: it is dropped when </think> comes.
    ReasoningSplitter think(kThinkOpened);
    QCOMPARE(think.push("\nA"), (ReasoningText{"A", ""}));
    QCOMPARE(think.push(" \n</"), ReasoningText{});
    QCOMPARE(think.push("b"), (ReasoningText{" \n</b", ""}));
    QCOMPARE(think.push("\n</think>\n"), ReasoningText{});
    QCOMPARE(think.push("\nB"), (ReasoningText{"", "B"}));
    QCOMPARE(think.finish(), ReasoningText{});

    // Without a format nothing waits.
    ReasoningSplitter none;
    QCOMPARE(none.push("<|en"), (ReasoningText{"", "<|en"}));
}

void TestReasoningSplit::format_from_the_template() {
    const auto format = [](const char* file) {
        return reasoning_format(ChatTemplate(template_text(file), "<s>", "</s>"));
    };
    QCOMPARE(format("openai-gpt-oss-120b.jinja"), ReasoningFormat::harmony);
    QCOMPARE(format("Qwen-Qwen3-0.6B.jinja"), ReasoningFormat::think);
    QCOMPARE(format("HuggingFaceTB-SmolLM3-3B.jinja"), ReasoningFormat::think);
    QCOMPARE(format("Qwen-Qwen2.5-7B-Instruct.jinja"), ReasoningFormat::none);
    QCOMPARE(format("meta-llama-Llama-3.1-8B-Instruct.jinja"), ReasoningFormat::none);
    QCOMPARE(reasoning_format(ChatTemplate("", "<s>", "</s>")), ReasoningFormat::none);
}

void TestReasoningSplit::mode_from_the_prompt() {
    QCOMPARE(reasoning_mode(ReasoningFormat::think, "<|im_start|>assistant\n<think>\n"), kThinkOpened);
    // Qwen3 with enable_thinking false: the block is closed already.
    QCOMPARE(reasoning_mode(ReasoningFormat::think, "<|im_start|>assistant\n<think>\n\n</think>\n\n"), kThink);
    QCOMPARE(reasoning_mode(ReasoningFormat::think, "<|im_start|>assistant\n"), kThink);
    QCOMPARE(reasoning_mode(ReasoningFormat::harmony, "<|start|>assistant"), kHarmony);
    // Qwen3's template opens nothing; a thinking template's generation prompt does.
    const ChatTemplate qwen3(template_text("Qwen-Qwen3-0.6B.jinja"), "", "<|im_end|>");
    QCOMPARE(reasoning_mode(qwen3), kThink);
    const ChatTemplate opening("{# </think> ends the reasoning #}{% for m in messages %}<|im_start|>{{ m.role }}\n"
                               "{{ m.content }}<|im_end|>\n{% endfor %}{% if add_generation_prompt %}"
                               "<|im_start|>assistant\n<think>\n{% endif %}",
                               "", "<|im_end|>");
    QCOMPARE(reasoning_mode(opening), kThinkOpened);
    const ChatTemplate gpt_oss(template_text("openai-gpt-oss-120b.jinja"), "<|startoftext|>", "<|return|>");
    QCOMPARE(reasoning_mode(gpt_oss), kHarmony);
}

void TestReasoningSplit::harmony_tokens_as_the_engine_decodes_them() {
    const Tokenizer tok(read_vocabulary(GgufFile(KVSCOPE_TEST_DATA "/tokenizers/o200k-subset-vocab.gguf")));
    // The markers are single tokens, decoded as their text; the final
    // message ends with <|return|>, which ends generation and shows nothing.
    const std::vector<TokenId> ids = tok.encode(kHarmonyReply + "<|return|>", {.add_special = false, .parse_special = true});
    QVERIFY(tok.is_stop_token(ids.back()));
    StreamDecoder decoder(tok);
    ReasoningSplitter splitter(kHarmony);
    ReasoningText shown;
    for (const TokenId id : std::span(ids).first(ids.size() - 1)) {
        shown += splitter.push(decoder.push(id));
        QVERIFY2(shown.content.find("<|") == std::string::npos, show(shown));
    }
    shown += splitter.push(decoder.flush());
    shown += splitter.finish();
    QCOMPARE(shown, (ReasoningText{"User greets. Reply.", "Hello! How can I help?"}));
    // The same reply's mode, read from its prompt's ids.
    const std::vector<TokenId> prompt = tok.encode("<|start|>user<|message|>Hi<|end|><|start|>assistant");
    const ChatTemplate gpt_oss(template_text("openai-gpt-oss-120b.jinja"), "<|startoftext|>", "<|return|>");
    QCOMPARE(reasoning_mode(gpt_oss, tok, prompt), kHarmony);
}

QTEST_GUILESS_MAIN(TestReasoningSplit)
#include "test_reasoning_split.moc"
