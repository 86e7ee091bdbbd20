// What the 2025-26 model families need of the tokenizer, from data kept in
// the repository:
// - gpt-oss and Phi-4-mini (o200k, tokenizer.ggml.pre = "gpt-4o"): a subset
//   of o200k_harmony (tests/data/tokenizers/o200k-subset-vocab.gguf, made
//   by engine/tokenizer/tools/make_o200k_subset.py) against the ids of the
//   original tokenizer (gpt-tokenizer's o200k_harmony), and gpt-oss's
//   harmony tokens;
// - Gemma 2 and 3 (SentencePiece "llama" vocabularies written with
//   add_space_prefix = false, byte fallback, user-defined newline and space
//   runs, <start_of_turn>/<end_of_turn>): a small hand-made vocabulary laid
//   out like Gemma's (its real 262k-piece vocabulary is not available
//   here), with llama.cpp's rules worked out by hand.
#include <QtTest>

#include <QTemporaryDir>

#include <algorithm>
#include <string>
#include <vector>

#include "engine/model/gguf_file.h"
#include "engine/tokenizer/bpe_tokenizer.h"
#include "engine/tokenizer/stream_decoder.h"
#include "engine/tokenizer/tokenizer.h"
#include "model/gguf_writer.h"
#include "reference_rows.h"

using namespace kvscope;
using namespace kvscope::test;

namespace {

const QString kO200kVocab =
    QStringLiteral(KVSCOPE_TEST_DATA "/tokenizers/o200k-subset-vocab.gguf");
const QString kO200kReference =
    QStringLiteral(KVSCOPE_TEST_DATA "/tokenizers/o200k-subset.reference.jsonl");

// The id of the token whose stored text is `text`.
std::int32_t id_of(const Tokenizer& tok, const std::string& text) {
    const auto& tokens = tok.vocabulary().tokens;
    const auto it = std::find(tokens.begin(), tokens.end(), text);
    if (it == tokens.end()) qFatal("no token %s", text.c_str());
    return static_cast<std::int32_t>(it - tokens.begin());
}

Ids ids_of(const Tokenizer& tok, std::initializer_list<std::string> texts) {
    Ids ids;
    for (const std::string& text : texts) ids.push_back(id_of(tok, text));
    return ids;
}

const std::string kSpace = "\xE2\x96\x81"; // ▁

std::string byte_piece(int b) {
    static const char* hex = "0123456789ABCDEF";
    return std::string("<0x") + hex[b >> 4] + hex[b & 15] + ">";
}

// A Gemma-style vocabulary as llama.cpp's converter writes it: <pad> 0,
// <eos> 1, <bos> 2, <unk> 3, the chat markers as control tokens, newline
// runs as pieces, user-defined space runs with real spaces (the converter
// turns "▁▁" into "  "), the 256 byte tokens, then ordinary pieces; no
// dummy prefix, BOS added.
test::GgufWriter gemma_like_vocab() {
    std::vector<std::string> tokens = {"<pad>", "<eos>", "<bos>", "<unk>", "<start_of_turn>",
                                       "<end_of_turn>", "\n", "\n\n", "  ", "   "};
    std::vector<std::int32_t> types = {3, 3, 3, 2, 3, 3, 1, 1, 4, 4};
    for (int b = 0; b < 256; ++b) {
        tokens.push_back(byte_piece(b));
        types.push_back(6);
    }
    for (const std::string& piece :
         {kSpace, std::string("H"), std::string("e"), std::string("l"), std::string("o"),
          std::string("w"), std::string("r"), std::string("d"), std::string("u"),
          std::string("s"), std::string("He"), std::string("ll"), std::string("Hell"),
          std::string("Hello"), kSpace + "w", kSpace + "world", std::string("us"),
          std::string("user"), std::string("or"), std::string("ld"), std::string("er"),
          std::string("orld")}) {
        tokens.push_back(piece);
        types.push_back(1);
    }
    std::vector<float> scores(tokens.size(), 0.0f);
    for (std::size_t i = 266; i < tokens.size(); ++i) scores[i] = -static_cast<float>(i - 266);
    scores[6] = -1000; // "\n" and "\n\n": merging two newlines wins over every piece
    scores[7] = 10;
    test::GgufWriter gguf;
    gguf.add_string("tokenizer.ggml.model", "llama");
    gguf.add_string("tokenizer.ggml.pre", "default");
    gguf.add_string_array("tokenizer.ggml.tokens", tokens);
    gguf.add_array<float>("tokenizer.ggml.scores", test::GgufWriter::F32, scores);
    gguf.add_array<std::int32_t>("tokenizer.ggml.token_type", test::GgufWriter::I32, types);
    gguf.add_u32("tokenizer.ggml.bos_token_id", 2);
    gguf.add_u32("tokenizer.ggml.eos_token_id", 1);
    gguf.add_u32("tokenizer.ggml.unknown_token_id", 3);
    gguf.add_u32("tokenizer.ggml.padding_token_id", 0);
    gguf.add_bool("tokenizer.ggml.add_bos_token", true);
    gguf.add_bool("tokenizer.ggml.add_eos_token", false);
    gguf.add_bool("tokenizer.ggml.add_space_prefix", false);
    return gguf;
}

Tokenizer load_written(const test::GgufWriter& gguf) {
    const QTemporaryDir dir;
    const std::string path = dir.filePath("vocab.gguf").toStdString();
    gguf.write(path);
    return Tokenizer(read_vocabulary(GgufFile(path)));
}

} // namespace

class TestTokenizerFamilies : public QObject {
    Q_OBJECT
private slots:
    void o200k_reference_encodings();
    void o200k_vocabulary_facts();
    void harmony_markers_are_always_parsed_and_shown();
    void harmony_stop_tokens();
    void gemma_has_no_dummy_prefix();
    void gemma_chat_turns();
    void gemma_byte_fallback();
    void gemma_newline_and_space_runs();
    void gemma_stop_tokens();
};

void TestTokenizerFamilies::o200k_reference_encodings() {
    // Each text as gpt-tokenizer's o200k_harmony encodes it (special-token
    // strings as plain text), and back.
    const Tokenizer tok = load_tokenizer(kO200kVocab);
    int rows = 0;
    for (const QJsonObject& row : read_jsonl(kO200kReference)) {
        const std::string text = utf8(row["text"]);
        const Ids expected = ids_of(row["ids"]);
        QCOMPARE(tok.encode(text), expected);
        QCOMPARE(tok.decode(expected), text);
        ++rows;
    }
    QCOMPARE(rows, 40);
}

void TestTokenizerFamilies::o200k_vocabulary_facts() {
    const Tokenizer tok = load_tokenizer(kO200kVocab);
    QCOMPARE(tok.vocabulary().pre, std::string("gpt-4o"));
    QCOMPARE(choose_pre_tokenizer(tok.vocabulary().pre).kind, PreTokenizerKind::gpt4o);
    QVERIFY(!tok.vocabulary().add_bos);
    QCOMPARE(tok.bos(), id_of(tok, "<|startoftext|>"));
    QCOMPARE(tok.eos(), id_of(tok, "<|return|>"));
    QVERIFY(!tok.has_space_prefix());
}

void TestTokenizerFamilies::harmony_markers_are_always_parsed_and_shown() {
    // llama.cpp makes <|start|>, <|message|>, <|channel|>, <|constrain|> and
    // <|end|> user-defined: matched without parse_special and decoded as
    // their text, so that a chat parser sees the channels.
    const Tokenizer tok = load_tokenizer(kO200kVocab);
    for (const char* marker :
         {"<|start|>", "<|message|>", "<|channel|>", "<|constrain|>", "<|end|>"})
        QCOMPARE(tok.token_type(id_of(tok, marker)), TokenType::user_defined);
    const std::string text = "<|start|>user<|message|>Hello world<|end|>";
    const Ids hello = tok.encode("Hello world");
    Ids expected = ids_of(tok, {"<|start|>"});
    const Ids user = tok.encode("user");
    expected.insert(expected.end(), user.begin(), user.end());
    expected.push_back(id_of(tok, "<|message|>"));
    expected.insert(expected.end(), hello.begin(), hello.end());
    expected.push_back(id_of(tok, "<|end|>"));
    QCOMPARE(tok.encode(text), expected);
    QCOMPARE(tok.decode(expected), text);
    // <|return|> stays a control token: text unless parse_special, and
    // decoded as nothing unless render_special.
    const Ids plain = tok.encode("<|return|>");
    QVERIFY(std::find(plain.begin(), plain.end(), tok.eos()) == plain.end());
    const Ids parsed = tok.encode("Hi<|return|>", {.parse_special = true});
    QCOMPARE(parsed.back(), tok.eos());
    QCOMPARE(tok.decode(parsed), std::string("Hi"));
    QCOMPARE(tok.decode(parsed, {.render_special = true}), std::string("Hi<|return|>"));
}

void TestTokenizerFamilies::harmony_stop_tokens() {
    // <|return|> (EOS) and <|call|> end the answer; <|end|> only ends one
    // message (the analysis channel before the final one) and must not stop.
    const Tokenizer tok = load_tokenizer(kO200kVocab);
    Ids expected = ids_of(tok, {"<|endoftext|>", "<|return|>", "<|call|>"});
    std::sort(expected.begin(), expected.end());
    QCOMPARE(tok.stop_tokens(), expected);
    QVERIFY(!tok.is_stop_token(id_of(tok, "<|end|>")));
    // Nor where the metadata names it the end of turn (llama.cpp drops it last).
    Vocabulary v = tok.vocabulary();
    v.eot = id_of(tok, "<|end|>");
    const Tokenizer named(std::move(v));
    QCOMPARE(named.stop_tokens(), expected);
}

void TestTokenizerFamilies::gemma_has_no_dummy_prefix() {
    const Tokenizer tok = load_written(gemma_like_vocab());
    QVERIFY(!tok.vocabulary().add_space_prefix);
    QVERIFY(!tok.has_space_prefix());
    QCOMPARE(tok.encode("Hello world"),
             (Ids{2, id_of(tok, "Hello"), id_of(tok, kSpace + "world")}));
    // A leading space is the text's own: it stays, and decoding keeps it.
    const Ids spaced = tok.encode(" world");
    QCOMPARE(spaced, (Ids{2, id_of(tok, kSpace + "world")}));
    QCOMPARE(tok.decode(spaced), std::string(" world"));
    QCOMPARE(tok.decode(tok.encode("Hello")), std::string("Hello"));
    QCOMPARE(tok.encode("", {.add_special = false}), Ids{});
}

void TestTokenizerFamilies::gemma_chat_turns() {
    // Gemma's prompt: <bos><start_of_turn>user\n...<end_of_turn>\n. No space
    // goes in after a special token either (llama.cpp adds one only with
    // add_space_prefix).
    const Tokenizer tok = load_written(gemma_like_vocab());
    const Ids ids =
        tok.encode("<start_of_turn>user\nHello<end_of_turn>\n", {.add_special = false,
                                                                 .parse_special = true});
    QCOMPARE(ids, ids_of(tok, {"<start_of_turn>", "user", "\n", "Hello", "<end_of_turn>", "\n"}));
    QCOMPARE(tok.decode(ids, {.render_special = true}),
             std::string("<start_of_turn>user\nHello<end_of_turn>\n"));
    // Without parse_special the markers are text ('<' and friends as bytes).
    const Ids plain = tok.encode("<end_of_turn>", {.add_special = false});
    QVERIFY(std::find(plain.begin(), plain.end(), 5) == plain.end());
    QCOMPARE(tok.decode(plain), std::string("<end_of_turn>"));
}

void TestTokenizerFamilies::gemma_byte_fallback() {
    // Characters without a piece become their UTF-8 bytes' tokens.
    const Tokenizer tok = load_written(gemma_like_vocab());
    const Ids ids = tok.encode("\xE2\x82\xAC" "d", {.add_special = false}); // €d
    QCOMPARE(ids, ids_of(tok, {"<0xE2>", "<0x82>", "<0xAC>", "d"}));
    QCOMPARE(tok.decode(ids), std::string("\xE2\x82\xAC" "d"));
}

void TestTokenizerFamilies::gemma_newline_and_space_runs() {
    // "\n\n" merges first (highest score); user-defined space runs match the
    // raw text before SentencePiece sees it, longest first, and no dummy
    // prefix follows them.
    const Tokenizer tok = load_written(gemma_like_vocab());
    QCOMPARE(tok.encode("d\n\n\nd", {.add_special = false}),
             ids_of(tok, {"d", "\n\n", "\n", "d"}));
    QCOMPARE(tok.encode("d     world", {.add_special = false}), // 5 spaces
             ids_of(tok, {"d", "   ", "  ", "w", "orld"}));
    QCOMPARE(tok.encode("d    world", {.add_special = false}), // 4 spaces
             ids_of(tok, {"d", "   ", kSpace + "world"}));
    QCOMPARE(tok.decode(tok.encode("d    world")), std::string("d    world"));
}

void TestTokenizerFamilies::gemma_stop_tokens() {
    const Tokenizer tok = load_written(gemma_like_vocab());
    QCOMPARE(tok.stop_tokens(), (Ids{1, 5})); // <eos>, <end_of_turn>
}

QTEST_GUILESS_MAIN(TestTokenizerFamilies)
#include "test_tokenizer_families.moc"
