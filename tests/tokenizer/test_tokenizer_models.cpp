// The tokenizer on real vocabularies against references made by other
// implementations: python sentencepiece on Llama 2's vocabulary
// (tokenizers/llama2-spm-vocab.reference.jsonl) and llama2.c's run.c on
// stories260K's (stories260K.reference.jsonl). See the READMEs there.
#include <QtTest>

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

#include <random>
#include <string>
#include <vector>

#include "engine/model/gguf_file.h"
#include "engine/tokenizer/chat_template.h"
#include "engine/tokenizer/stream_decoder.h"
#include "engine/tokenizer/tokenizer.h"
#include "support/test_models.h"
#include "tokenizer_test_support.h"

using namespace kvscope;

namespace {

Tokenizer load_tokenizer(const QString& path) {
    const GgufFile file(path.toStdString());
    return Tokenizer(read_vocabulary(file));
}

std::vector<QJsonObject> read_jsonl(const QString& path) {
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly)) qFatal("cannot open %s", qPrintable(path));
    std::vector<QJsonObject> rows;
    for (const QByteArray& line : file.readAll().split('\n'))
        if (!line.trimmed().isEmpty()) rows.push_back(QJsonDocument::fromJson(line).object());
    return rows;
}

std::string utf8(const QJsonValue& value) { return value.toString().toStdString(); }

Ids ids_of(const QJsonValue& value) {
    Ids ids;
    for (const QJsonValue& id : value.toArray()) ids.push_back(id.toInt());
    return ids;
}

void append(Ids& ids, const Ids& more) { ids.insert(ids.end(), more.begin(), more.end()); }

bool is_valid_utf8(const std::string& s) {
    const QByteArray bytes(s.data(), static_cast<qsizetype>(s.size()));
    return QString::fromUtf8(bytes).toUtf8() == bytes;
}

// A code point from a mix of scripts, emoji, combining marks and
// whitespace; never U+2581, which SentencePiece cannot tell from a space.
char32_t random_code_point(std::mt19937& rng) {
    static const std::vector<std::pair<char32_t, char32_t>> ranges = {
        {0x20, 0x7E},     {0x20, 0x20},     {0x09, 0x0A},       {0x0D, 0x0D},
        {0xA0, 0xFF},     {0x0300, 0x036F}, {0x0391, 0x03C9},   {0x0410, 0x044F},
        {0x0600, 0x06FF}, {0x0900, 0x097F}, {0x3040, 0x30FF},   {0x4E00, 0x9FFF},
        {0xAC00, 0xD7A3}, {0x2000, 0x206F}, {0x1F300, 0x1F6FF}, {0x1D400, 0x1D7FF},
        {0xE000, 0xE0FF}, {0x10FF00, 0x10FFFF}};
    const auto& [lo, hi] = ranges[rng() % ranges.size()];
    return static_cast<char32_t>(lo + rng() % (hi - lo + 1));
}

std::string random_text(std::mt19937& rng) {
    std::u32string text(rng() % 48, U' ');
    for (char32_t& c : text) c = random_code_point(rng);
    return QString::fromUcs4(text.data(), static_cast<qsizetype>(text.size())).toStdString();
}

} // namespace

class TestTokenizerModels : public QObject {
    Q_OBJECT
private slots:
    void llama2_reference_encodings();
    void llama2_reference_decodings();
    void llama2_long_text_matches_rows();
    void stories260k_prompts();
    void stories260k_decodes_like_run_c();
    void random_text_round_trips();
    void random_bytes_survive();
    void llama2_chat_prompt();
    void stories260k_has_no_chat_template();
};

void TestTokenizerModels::llama2_reference_encodings() {
    KVSCOPE_REQUIRE_MODEL(vocab, "tokenizers/llama2-spm-vocab.gguf");
    KVSCOPE_REQUIRE_MODEL(reference, "tokenizers/llama2-spm-vocab.reference.jsonl");
    const Tokenizer tok = load_tokenizer(vocab);
    QVERIFY(tok.vocabulary().add_bos);
    int matched = 0;
    for (const QJsonObject& row : read_jsonl(reference)) {
        QVERIFY(row["add_bos"].toBool());
        QCOMPARE(tok.encode(utf8(row["text"])), ids_of(row["ids"]));
        ++matched;
    }
    QCOMPARE(matched, 33);
}

void TestTokenizerModels::llama2_reference_decodings() {
    KVSCOPE_REQUIRE_MODEL(vocab, "tokenizers/llama2-spm-vocab.gguf");
    KVSCOPE_REQUIRE_MODEL(reference, "tokenizers/llama2-spm-vocab.reference.jsonl");
    const Tokenizer tok = load_tokenizer(vocab);
    for (const QJsonObject& row : read_jsonl(reference)) {
        const std::string text = utf8(row["text"]);
        const Ids ids = ids_of(row["ids"]);
        QCOMPARE(tok.decode(ids), text);
        // llama.cpp's llama_detokenize keeps the dummy-prefix space after
        // BOS: [1, 15043, 3186] -> " Hello world" (tokenizers/README.md).
        QCOMPARE(tok.decode(ids, {.keep_leading_space = true}), text.empty() ? "" : " " + text);
    }
}

void TestTokenizerModels::llama2_long_text_matches_rows() {
    // No Llama 2 piece holds "\n" together with anything else, so "\n "
    // separates the rows' encodings exactly: each row after it is encoded
    // as on its own (the " " plays the dummy prefix), and "\n" is <0x0A>.
    // Twenty copies make a text of some 60 KB with repeated words.
    KVSCOPE_REQUIRE_MODEL(vocab, "tokenizers/llama2-spm-vocab.gguf");
    KVSCOPE_REQUIRE_MODEL(reference, "tokenizers/llama2-spm-vocab.reference.jsonl");
    const Tokenizer tok = load_tokenizer(vocab);
    std::string text;
    Ids expected{tok.bos()};
    for (int copy = 0; copy < 20; ++copy) {
        for (const QJsonObject& row : read_jsonl(reference)) {
            if (row["text"].toString().isEmpty()) continue;
            const Ids ids = ids_of(row["ids"]);
            if (!text.empty()) {
                text += "\n ";
                expected.push_back(3 + '\n');
            }
            text += utf8(row["text"]);
            append(expected, Ids(ids.begin() + 1, ids.end()));
        }
    }
    QCOMPARE(tok.encode(text), expected);
    QCOMPARE(tok.decode(expected), text);
}

void TestTokenizerModels::stories260k_prompts() {
    KVSCOPE_REQUIRE_MODEL(model, "stories260K-f32.gguf");
    KVSCOPE_REQUIRE_MODEL(reference, "stories260K.reference.jsonl");
    const Tokenizer tok = load_tokenizer(model);
    int matched = 0;
    for (const QJsonObject& row : read_jsonl(reference)) {
        QCOMPARE(tok.encode(utf8(row["prompt"])), ids_of(row["prompt_token_ids"]));
        ++matched;
    }
    QCOMPARE(matched, 6);
}

void TestTokenizerModels::stories260k_decodes_like_run_c() {
    // run.c prints the prompt and the continuation without the space of the
    // piece after BOS: decode() of all ids. Streaming keeps every space as
    // llama.cpp does, so only the empty prompt's continuation differs: it
    // starts with " Once" where run.c printed "Once".
    KVSCOPE_REQUIRE_MODEL(model, "stories260K-f32.gguf");
    KVSCOPE_REQUIRE_MODEL(reference, "stories260K.reference.jsonl");
    const Tokenizer tok = load_tokenizer(model);
    for (const QJsonObject& row : read_jsonl(reference)) {
        Ids all = ids_of(row["prompt_token_ids"]);
        const Ids generated = ids_of(row["generated_token_ids"]);
        append(all, generated);
        QCOMPARE(tok.decode(all), utf8(row["text"]));

        StreamDecoder stream(tok);
        std::string continuation;
        for (const std::int32_t id : generated) continuation += stream.push(id);
        continuation += stream.flush();
        const std::string run_c = utf8(row["continuation"]);
        QCOMPARE(continuation, row["prompt"].toString().isEmpty() ? " " + run_c : run_c);
    }
}

void TestTokenizerModels::random_text_round_trips() {
    KVSCOPE_REQUIRE_MODEL(vocab, "tokenizers/llama2-spm-vocab.gguf");
    const Tokenizer tok = load_tokenizer(vocab);
    std::mt19937 rng(20240611);
    for (int i = 0; i < 400; ++i) {
        const std::string text = random_text(rng);
        const Ids ids = tok.encode(text);
        QCOMPARE(ids.front(), tok.bos());
        QCOMPARE(tok.decode(ids), text);
    }
}

void TestTokenizerModels::random_bytes_survive() {
    // Arbitrary bytes: every byte comes back through byte fallback, and the
    // decoded text is valid UTF-8 that equals the input when it was valid.
    KVSCOPE_REQUIRE_MODEL(vocab, "tokenizers/llama2-spm-vocab.gguf");
    const Tokenizer tok = load_tokenizer(vocab);
    std::mt19937 rng(77);
    for (int i = 0; i < 400; ++i) {
        std::string bytes(rng() % 40, '\0');
        for (char& c : bytes) c = static_cast<char>(rng() % 4 == 0 ? rng() % 0x80 : rng());
        const Ids ids = tok.encode(bytes, {.add_special = false});

        std::string pieces;
        for (const std::int32_t id : ids) pieces += tok.token_piece(id);
        QCOMPARE(pieces, bytes.empty() ? "" : " " + bytes);

        const std::string text = tok.decode(ids);
        QVERIFY(is_valid_utf8(text));
        if (is_valid_utf8(bytes)) QCOMPARE(text, bytes);
    }
}

void TestTokenizerModels::llama2_chat_prompt() {
    // The rendered "<s>[INST] ..." starts with BOS itself: one BOS, not two;
    // "</s><s>" between turns become EOS and BOS; the text after each
    // special token gets the dummy-prefix space, as in llama.cpp.
    KVSCOPE_REQUIRE_MODEL(vocab, "tokenizers/llama2-spm-vocab.gguf");
    const Tokenizer tok = load_tokenizer(vocab);
    const ChatTemplate chat("{{ bos_token + '[INST] ' + content.strip() + ' [/INST]' }} <<SYS>>",
                            tok.token_text(tok.bos()), tok.token_text(tok.eos()));
    QCOMPARE(chat.family(), ChatFamily::llama2);
    const std::vector<ChatMessage> turns{{"user", "Hello"}, {"assistant", "Hi"}, {"user", "Bye"}};
    const std::string text = chat.render(turns);
    QCOMPARE(text, std::string("<s>[INST] Hello [/INST] Hi </s><s>[INST] Bye [/INST]"));
    Ids expected = tok.encode("[INST] Hello [/INST] Hi ");
    expected.push_back(tok.eos());
    append(expected, tok.encode("[INST] Bye [/INST]"));
    QCOMPARE(chat.encode(tok, text), expected);
    QCOMPARE(std::count(expected.begin(), expected.end(), tok.bos()), 2);
    // Decoding shows those dummy-prefix spaces.
    QCOMPARE(tok.decode(expected, {.render_special = true}),
             std::string("<s> [INST] Hello [/INST] Hi </s><s> [INST] Bye [/INST]"));
}

void TestTokenizerModels::stories260k_has_no_chat_template() {
    KVSCOPE_REQUIRE_MODEL(model, "stories260K-f32.gguf");
    const GgufFile file(model.toStdString());
    const Tokenizer tok(read_vocabulary(file));
    const ChatTemplate chat = ChatTemplate::for_model(file, tok);
    QCOMPARE(chat.family(), ChatFamily::none);
    // Plain completion: the text as it is, BOS as the vocabulary asks.
    const std::vector<ChatMessage> turns{{"user", "Once upon a time"}};
    QCOMPARE(chat.render(turns), std::string("Once upon a time"));
    QCOMPARE(chat.encode(tok, "Once upon a time"), tok.encode("Once upon a time"));
}

QTEST_GUILESS_MAIN(TestTokenizerModels)
#include "test_tokenizer_models.moc"
