// Byte-level BPE on real vocabularies against ids made by other
// implementations (gpt-tokenizer's r50k_base and cl100k_base, which
// llama.cpp reproduces too): tokenizers/gpt2-bpe-vocab.* (pre = gpt-2) and
// tokenizers/llama3-bpe-vocab.* (pre = llama-bpe). See the README there.
#include <QtTest>

#include <random>
#include <string>

#include "engine/tokenizer/bpe_tokenizer.h"
#include "engine/tokenizer/chat_template.h"
#include "engine/tokenizer/stream_decoder.h"
#include "engine/tokenizer/tokenizer.h"
#include "reference_rows.h"
#include "support/test_models.h"

using namespace kvscope;
using namespace kvscope::test;

class TestTokenizerBpeModels : public QObject {
    Q_OBJECT
private slots:
    void reference_encodings_data();
    void reference_encodings();
    void reference_decodings_data();
    void reference_decodings();
    void vocabulary_facts();
    void special_tokens_only_when_asked();
    void stop_tokens();
    void chatml_prompt();
    void long_text_with_repeated_words();
    void random_text_round_trips_data();
    void random_text_round_trips();
    void random_bytes_survive_data();
    void random_bytes_survive();

private:
    static void add_vocab_rows();
};

void TestTokenizerBpeModels::add_vocab_rows() {
    QTest::addColumn<QString>("name");
    QTest::newRow("gpt2") << "gpt2-bpe-vocab";
    QTest::newRow("llama3") << "llama3-bpe-vocab";
}

void TestTokenizerBpeModels::reference_encodings_data() { add_vocab_rows(); }

void TestTokenizerBpeModels::reference_encodings() {
    QFETCH(QString, name);
    KVSCOPE_REQUIRE_MODEL_NAMED(vocab, "tokenizers/" + name + ".gguf");
    KVSCOPE_REQUIRE_MODEL_NAMED(reference, "tokenizers/" + name + ".reference.jsonl");
    const Tokenizer tok = load_tokenizer(vocab);
    int matched = 0;
    for (const QJsonObject& row : read_jsonl(reference)) {
        QVERIFY(!row["add_bos"].toBool());
        const std::string text = utf8(row["text"]);
        QCOMPARE(tok.encode(text), ids_of(row["ids"]));
        ++matched;
    }
    QCOMPARE(matched, 33);
}

void TestTokenizerBpeModels::reference_decodings_data() { add_vocab_rows(); }

void TestTokenizerBpeModels::reference_decodings() {
    // decode(ids) == text, and streaming one id at a time gives the same
    // text: bytes of a character split across tokens (Korean, emoji) wait.
    QFETCH(QString, name);
    KVSCOPE_REQUIRE_MODEL_NAMED(vocab, "tokenizers/" + name + ".gguf");
    KVSCOPE_REQUIRE_MODEL_NAMED(reference, "tokenizers/" + name + ".reference.jsonl");
    const Tokenizer tok = load_tokenizer(vocab);
    for (const QJsonObject& row : read_jsonl(reference)) {
        const std::string text = utf8(row["text"]);
        const Ids ids = ids_of(row["ids"]);
        QCOMPARE(tok.decode(ids), text);
        StreamDecoder stream(tok);
        std::string streamed;
        for (const std::int32_t id : ids) {
            const std::string piece = stream.push(id);
            QVERIFY(is_valid_utf8(piece));
            streamed += piece;
        }
        streamed += stream.flush();
        QCOMPARE(streamed, text);
    }
}

void TestTokenizerBpeModels::vocabulary_facts() {
    KVSCOPE_REQUIRE_MODEL(gpt2_path, "tokenizers/gpt2-bpe-vocab.gguf");
    KVSCOPE_REQUIRE_MODEL(llama3_path, "tokenizers/llama3-bpe-vocab.gguf");
    const Tokenizer gpt2 = load_tokenizer(gpt2_path);
    QCOMPARE(gpt2.n_tokens(), 50257);
    QCOMPARE(gpt2.vocabulary().pre, std::string("gpt-2"));
    QCOMPARE(gpt2.vocabulary().merges.size(), std::size_t{50000});
    QVERIFY(!gpt2.vocabulary().add_bos);
    QVERIFY(!gpt2.has_space_prefix());
    QCOMPARE(gpt2.bos(), 50256);
    QCOMPARE(gpt2.eos(), 50256);
    // Byte-to-unicode: "Ġ" is a space, "Ċ" a newline.
    QCOMPARE(std::string(gpt2.token_piece(220)), std::string(" "));
    QCOMPARE(gpt2.token_text(220), std::string("\xC4\xA0"));
    QCOMPARE(std::string(gpt2.token_piece(198)), std::string("\n"));
    QCOMPARE(std::string(gpt2.token_piece(50256)), std::string());
    QCOMPARE(std::string(gpt2.token_piece(50256, true)), std::string("<|endoftext|>"));

    const Tokenizer llama3 = load_tokenizer(llama3_path);
    QCOMPARE(llama3.n_tokens(), 100277);
    QCOMPARE(llama3.vocabulary().pre, std::string("llama-bpe"));
    QVERIFY(!llama3.vocabulary().add_bos); // the file says so, over llama.cpp's default
    QCOMPARE(llama3.bos(), 100257);
    QCOMPARE(llama3.token_type(100256), TokenType::unused);
    QCOMPARE(std::string(llama3.token_piece(100256)), std::string());
}

void TestTokenizerBpeModels::special_tokens_only_when_asked() {
    KVSCOPE_REQUIRE_MODEL(gpt2_path, "tokenizers/gpt2-bpe-vocab.gguf");
    KVSCOPE_REQUIRE_MODEL(llama3_path, "tokenizers/llama3-bpe-vocab.gguf");
    const Tokenizer gpt2 = load_tokenizer(gpt2_path);
    const std::string text = "a <|endoftext|> b";
    // Plain text: "Ġ<", "|", "end", "of", "text", "|", ">" (README).
    const Ids plain = gpt2.encode(text);
    QVERIFY(std::find(plain.begin(), plain.end(), 50256) == plain.end());
    QCOMPARE(gpt2.decode(plain), text);
    const Ids parsed = gpt2.encode(text, {.parse_special = true});
    QCOMPARE(parsed, (Ids{64, 220, 50256, 275}));
    QCOMPARE(gpt2.decode(parsed), std::string("a  b"));
    QCOMPARE(gpt2.decode(parsed, {.render_special = true}), text);

    const Tokenizer llama3 = load_tokenizer(llama3_path);
    const Ids chat = llama3.encode("<|im_start|>user\nHi<|im_end|>", {.parse_special = true});
    QCOMPARE(chat.front(), 100264);
    QCOMPARE(chat.back(), 100265);
    QCOMPARE(chat.size(), std::size_t{5}); // <|im_start|> user \n Hi <|im_end|>
    // The placeholders [PAD100256] are unused, never special.
    const Ids pad = llama3.encode("[PAD100256]", {.parse_special = true});
    QVERIFY(std::find(pad.begin(), pad.end(), 100256) == pad.end());
}

void TestTokenizerBpeModels::stop_tokens() {
    KVSCOPE_REQUIRE_MODEL(gpt2_path, "tokenizers/gpt2-bpe-vocab.gguf");
    KVSCOPE_REQUIRE_MODEL(llama3_path, "tokenizers/llama3-bpe-vocab.gguf");
    QCOMPARE(load_tokenizer(gpt2_path).stop_tokens(), (Ids{50256}));
    const Tokenizer llama3 = load_tokenizer(llama3_path);
    QCOMPARE(llama3.stop_tokens(), (Ids{100257, 100265})); // <|endoftext|>, <|im_end|>
    QVERIFY(llama3.is_stop_token(100265));
    QVERIFY(!llama3.is_stop_token(100264));
}

void TestTokenizerBpeModels::chatml_prompt() {
    // cl100k has <|im_start|> and <|im_end|> as control tokens: a ChatML
    // prompt holds them as single ids, the rest is plain text; no BOS
    // (add_bos_token = false).
    KVSCOPE_REQUIRE_MODEL(llama3_path, "tokenizers/llama3-bpe-vocab.gguf");
    const Tokenizer tok = load_tokenizer(llama3_path);
    const ChatTemplate chat("{{'<|im_start|>' + message['role'] + '\\n'}}", "", "");
    QCOMPARE(chat.family(), ChatFamily::chatml);
    const std::vector<ChatMessage> turns{{"user", "Hi <|im_end|> there"}};
    const std::string text = chat.render(turns);
    const Ids ids = chat.encode(tok, text);
    Ids expected{100264};
    auto add = [&](const std::string& plain) {
        const Ids part = tok.encode(plain);
        expected.insert(expected.end(), part.begin(), part.end());
    };
    add("user\nHi ");
    expected.push_back(100265); // a special-token string in the content is parsed too
    add(" there");
    expected.push_back(100265);
    add("\n");
    expected.push_back(100264);
    add("assistant\n");
    QCOMPARE(ids, expected);
    QCOMPARE(tok.decode(ids, {.render_special = true}), text);
}

void TestTokenizerBpeModels::long_text_with_repeated_words() {
    // A long text against the concatenation of its lines, each encoded
    // alone: these lines end with a letter or digit and start with a
    // letter, so "\n" is a word of its own in both pre-tokenizers. Words
    // repeat thousands of times (the per-text word cache).
    KVSCOPE_REQUIRE_MODEL(gpt2_path, "tokenizers/gpt2-bpe-vocab.gguf");
    KVSCOPE_REQUIRE_MODEL(llama3_path, "tokenizers/llama3-bpe-vocab.gguf");
    const char* lines[] = {"The quick brown fox jumps over the lazy dog",
                           "Hello world and hello again",
                           "I'm sure you don't know THEY'LL come",
                           "Numbers like 1234567 and 3",
                           "Korean 안녕하세요 and emoji 🍕 together"};
    for (const QString& path : {gpt2_path, llama3_path}) {
        const Tokenizer tok = load_tokenizer(path);
        const Ids newline = tok.encode("\n");
        QCOMPARE(newline.size(), std::size_t{1});
        std::string text;
        Ids expected;
        std::mt19937 rng(5);
        for (int i = 0; i < 2000; ++i) {
            const std::string line = lines[rng() % std::size(lines)];
            if (!text.empty()) {
                text += "\n";
                expected.push_back(newline[0]);
            }
            text += line;
            const Ids ids = tok.encode(line);
            expected.insert(expected.end(), ids.begin(), ids.end());
        }
        QCOMPARE(tok.encode(text), expected);
        QCOMPARE(tok.decode(expected), text);
    }
}

void TestTokenizerBpeModels::random_text_round_trips_data() { add_vocab_rows(); }

void TestTokenizerBpeModels::random_text_round_trips() {
    QFETCH(QString, name);
    KVSCOPE_REQUIRE_MODEL_NAMED(vocab, "tokenizers/" + name + ".gguf");
    const Tokenizer tok = load_tokenizer(vocab);
    std::mt19937 rng(20240611);
    for (int i = 0; i < 1000; ++i) {
        const std::string text = random_text(rng, 64);
        const Ids ids = tok.encode(text);
        for (const std::int32_t id : ids) QCOMPARE(tok.token_type(id), TokenType::normal);
        QCOMPARE(tok.decode(ids), text);
    }
}

void TestTokenizerBpeModels::random_bytes_survive_data() { add_vocab_rows(); }

void TestTokenizerBpeModels::random_bytes_survive() {
    // Byte-level BPE keeps every byte, valid UTF-8 or not; decoding turns
    // what is not UTF-8 into U+FFFD and never fails.
    QFETCH(QString, name);
    KVSCOPE_REQUIRE_MODEL_NAMED(vocab, "tokenizers/" + name + ".gguf");
    const Tokenizer tok = load_tokenizer(vocab);
    std::mt19937 rng(77);
    for (int i = 0; i < 1000; ++i) {
        const std::string bytes = random_bytes(rng, 48);
        const Ids ids = tok.encode(bytes, {.parse_special = true});
        std::string pieces;
        for (const std::int32_t id : ids) pieces += tok.token_piece(id);
        QCOMPARE(pieces, bytes);
        const std::string text = tok.decode(ids);
        QVERIFY(is_valid_utf8(text));
        if (is_valid_utf8(bytes)) QCOMPARE(text, bytes);
    }
}

QTEST_GUILESS_MAIN(TestTokenizerBpeModels)
#include "test_tokenizer_bpe_models.moc"
