// The SentencePiece BPE tokenizer on small hand-made vocabularies, where
// every expected result is worked out by hand from the algorithm's rules
// (sentencepiece's bpe_model.cc): merge order, byte fallback, unused
// pieces, special tokens, vocabulary checks and UTF-8 stream decoding.
#include <QtTest>

#include <cmath>
#include <initializer_list>
#include <string>
#include <vector>

#include <QTemporaryDir>

#include "engine/core/error.h"
#include "engine/model/gguf_file.h"
#include "engine/tokenizer/stream_decoder.h"
#include "engine/tokenizer/tokenizer.h"
#include "model/gguf_writer.h"
#include "tokenizer_test_support.h"

using namespace kvscope;

namespace {

struct Piece {
    std::string text;
    float score = 0.0f;
    TokenType type = TokenType::normal;
};

std::string byte_piece(int b) {
    static const char* hex = "0123456789ABCDEF";
    return std::string("<0x") + hex[b >> 4] + hex[b & 15] + ">";
}

// Laid out like Llama 2: <unk> 0, <s> 1, </s> 2, then (with_bytes) the 256
// byte tokens, then `pieces`.
Vocabulary make_vocab(std::initializer_list<Piece> pieces, bool with_bytes = true) {
    Vocabulary v;
    v.model = "llama";
    auto add = [&v](std::string text, float score, TokenType type) {
        v.tokens.push_back(std::move(text));
        v.scores.push_back(score);
        v.types.push_back(static_cast<std::int32_t>(type));
    };
    add("<unk>", 0, TokenType::unknown);
    add("<s>", 0, TokenType::control);
    add("</s>", 0, TokenType::control);
    if (with_bytes)
        for (int b = 0; b < 256; ++b) add(byte_piece(b), 0, TokenType::byte);
    for (const Piece& p : pieces) add(p.text, p.score, p.type);
    v.unk = 0;
    v.bos = 1;
    v.eos = 2;
    v.add_bos = true;
    return v;
}

// The ids of the given token strings, so that expectations read as pieces.
Ids ids_of(const Tokenizer& tok, std::initializer_list<std::string> texts) {
    Ids ids;
    for (const std::string& text : texts) {
        const auto& tokens = tok.vocabulary().tokens;
        const auto it = std::find(tokens.begin(), tokens.end(), text);
        if (it == tokens.end()) qFatal("no token %s", text.c_str());
        ids.push_back(static_cast<std::int32_t>(it - tokens.begin()));
    }
    return ids;
}

constexpr EncodeOptions kNoSpecial{.add_special = false};

// The message of the kvscope::Error that `make` throws, or "" if none.
template <typename F>
QString error_of(F make) {
    try {
        make();
    } catch (const Error& e) {
        return QString::fromUtf8(e.what());
    }
    return {};
}

const std::string kSpace = "\xE2\x96\x81"; // ▁
const std::string kReplacement = "\xEF\xBF\xBD";

} // namespace

class TestTokenizer : public QObject {
    Q_OBJECT
private slots:
    void highest_score_merges_first();
    void equal_scores_merge_leftmost();
    void merges_build_on_merges();
    void piece_with_inner_space_merges_across_words();
    void piece_with_newline_merges_across_it();
    void unknown_characters_fall_back_to_bytes();
    void unknown_runs_become_one_unk_without_bytes();
    void unused_pieces_split_again();
    void control_and_byte_strings_are_plain_text();
    void parse_special_matches_control_tokens();
    void user_defined_tokens_always_match();
    void bos_eos_and_empty_text();
    void no_space_prefix();
    void decode_strips_or_keeps_dummy_prefix();
    void decode_special_tokens();
    void stream_waits_for_complete_characters();
    void invalid_bytes_become_replacement_characters();
    void unicode_standard_replacement_example();
    void rejects_bad_vocabularies_data();
    void rejects_bad_vocabularies();
    void rejects_out_of_range_ids();
    void reads_vocabulary_with_llama_cpp_defaults();
    void reads_vocabulary_keys();
    void vocabulary_read_errors();
};

void TestTokenizer::highest_score_merges_first() {
    // "▁abc": candidate pairs ab (1) and bc (2); bc wins, and "abc" is no
    // piece, so a stays alone. With the scores swapped, ab wins instead.
    const Tokenizer bc_first(make_vocab({{kSpace}, {"a"}, {"b"}, {"c"}, {"ab", 1}, {"bc", 2}}));
    QCOMPARE(bc_first.encode("abc", kNoSpecial), ids_of(bc_first, {kSpace, "a", "bc"}));
    const Tokenizer ab_first(make_vocab({{kSpace}, {"a"}, {"b"}, {"c"}, {"ab", 2}, {"bc", 1}}));
    QCOMPARE(ab_first.encode("abc", kNoSpecial), ids_of(ab_first, {kSpace, "ab", "c"}));
}

void TestTokenizer::equal_scores_merge_leftmost() {
    // "aaa" with one piece "aa": the leftmost pair merges first.
    const Tokenizer tok(make_vocab({{kSpace}, {"a"}, {"aa", 1}}));
    QCOMPARE(tok.encode("aaa", kNoSpecial), ids_of(tok, {kSpace, "aa", "a"}));
    QCOMPARE(tok.encode("aaaaa", kNoSpecial), ids_of(tok, {kSpace, "aa", "aa", "a"}));
}

void TestTokenizer::merges_build_on_merges() {
    // ▁ h e l l o: "ll" (5) first, then "ell" (4) = e + ll, then "▁h" (3),
    // then "▁hell" (2) = ▁h + ell, then "▁hello" (1).
    const Tokenizer tok(make_vocab({{kSpace}, {"h"}, {"e"}, {"l"}, {"o"}, {"ll", 5}, {"ell", 4},
                                    {kSpace + "h", 3}, {kSpace + "hell", 2},
                                    {kSpace + "hello", 1}}));
    QCOMPARE(tok.encode("hello", kNoSpecial), ids_of(tok, {kSpace + "hello"}));
    // After an x, "▁h" cannot form and "hell" is no piece; x is no piece.
    QCOMPARE(tok.encode("xhello", kNoSpecial), ids_of(tok, {kSpace, "<0x78>", "h", "ell", "o"}));
}

void TestTokenizer::piece_with_inner_space_merges_across_words() {
    // "a b" -> ▁ a ▁ b: "▁b" (2) beats "▁a" (1); then "a▁b" (10) = a + ▁b.
    // The piece "a▁b" spans a word start, so the text must stay one sequence.
    const Tokenizer tok(make_vocab(
        {{kSpace}, {"a"}, {"b"}, {kSpace + "a", 1}, {kSpace + "b", 2}, {"a" + kSpace + "b", 10}}));
    QCOMPARE(tok.encode("a b", kNoSpecial), ids_of(tok, {kSpace, "a" + kSpace + "b"}));
}

void TestTokenizer::piece_with_newline_merges_across_it() {
    // "a\n\nb": "\n\n" is a piece, so "\n" is not cut out on its own.
    const Tokenizer tok(make_vocab({{kSpace}, {"a"}, {"b"}, {"\n"}, {"\n\n", 1}, {"a\n", 2}}));
    // ▁ a \n \n b: "a\n" (2) first, then nothing: "\n\n" lost its left \n.
    QCOMPARE(tok.encode("a\n\nb", kNoSpecial), ids_of(tok, {kSpace, "a\n", "\n", "b"}));
    QCOMPARE(tok.encode("\n\nb", kNoSpecial), ids_of(tok, {kSpace, "\n\n", "b"}));
}

void TestTokenizer::unknown_characters_fall_back_to_bytes() {
    // é (C3 A9) and 𝔘 (F0 9D 94 98) are no pieces: their UTF-8 bytes.
    const Tokenizer tok(make_vocab({{kSpace}, {"a"}}));
    QCOMPARE(tok.encode("a\xC3\xA9", kNoSpecial),
             ids_of(tok, {kSpace, "a", "<0xC3>", "<0xA9>"}));
    QCOMPARE(tok.encode("\xF0\x9D\x94\x98", kNoSpecial),
             ids_of(tok, {kSpace, "<0xF0>", "<0x9D>", "<0x94>", "<0x98>"}));
    // Ill-formed input is kept byte for byte.
    QCOMPARE(tok.encode("\xFF" "a\xC3", kNoSpecial),
             ids_of(tok, {kSpace, "<0xFF>", "a", "<0xC3>"}));
}

void TestTokenizer::unknown_runs_become_one_unk_without_bytes() {
    // sentencepiece without byte_fallback merges a run of unknown pieces.
    const Tokenizer tok(make_vocab({{kSpace}, {"a"}}, /*with_bytes=*/false));
    QCOMPARE(tok.encode("a\xC3\xA9\xC3\xA9" "a\xC3\xA9", kNoSpecial),
             ids_of(tok, {kSpace, "a", "<unk>", "a", "<unk>"}));
}

void TestTokenizer::unused_pieces_split_again() {
    // "ab" is unused: it may merge (and so block "bc"), but is written as
    // its parts. "abc" (normal) can still grow out of it.
    const Tokenizer tok(make_vocab({{kSpace}, {"a"}, {"b"}, {"c"}, {"d"},
                                    {"ab", 5, TokenType::unused}, {"bc", 4}, {"abd", 1}}));
    QCOMPARE(tok.encode("abc", kNoSpecial), ids_of(tok, {kSpace, "a", "b", "c"}));
    QCOMPARE(tok.encode("abd", kNoSpecial), ids_of(tok, {kSpace, "abd"}));
}

void TestTokenizer::control_and_byte_strings_are_plain_text() {
    // "<s" is a normal piece, "<s>" a control token and "<0x41>" a byte
    // token: typed as text, none of the special ids appear.
    const Tokenizer tok(make_vocab({{kSpace}, {"<"}, {"s"}, {">"}, {"<s", 1}}));
    QCOMPARE(tok.encode("<s>", kNoSpecial), ids_of(tok, {kSpace, "<s", ">"}));
    const Ids bytes = tok.encode("<0x41>", kNoSpecial);
    QVERIFY(std::find(bytes.begin(), bytes.end(), 3 + 0x41) == bytes.end());
}

void TestTokenizer::parse_special_matches_control_tokens() {
    const Tokenizer tok(make_vocab({{kSpace}, {"h"}, {"i"}, {"hi", 2}, {kSpace + "hi", 1}}));
    const EncodeOptions parse{.add_special = false, .parse_special = true};
    // As llama.cpp: text after a special token gets the dummy prefix again.
    QCOMPARE(tok.encode("<s>hi</s>hi", parse),
             (Ids{1, ids_of(tok, {kSpace + "hi"})[0], 2, ids_of(tok, {kSpace + "hi"})[0]}));
    QCOMPARE(tok.encode("hi<unk>", parse), (Ids{ids_of(tok, {kSpace + "hi"})[0], 0}));
    QCOMPARE(tok.encode("<s>", parse), Ids{1});
    // Without parse_special "<s>" is text: byte fallback here.
    QCOMPARE(tok.encode("<s>", kNoSpecial),
             ids_of(tok, {kSpace, "<0x3C>", "<0x73>", "<0x3E>"}));
}

void TestTokenizer::user_defined_tokens_always_match() {
    // The longest user-defined string at a position wins.
    const Tokenizer tok(make_vocab({{kSpace}, {"a"}, {"<t>", 0, TokenType::user_defined},
                                    {"<t><t>", 0, TokenType::user_defined}}));
    QCOMPARE(tok.encode("a<t><t><t>a", kNoSpecial),
             ids_of(tok, {kSpace, "a", "<t><t>", "<t>", kSpace, "a"}));
    QCOMPARE(tok.decode(ids_of(tok, {"<t>", kSpace, "a"})), std::string("<t> a"));
}

void TestTokenizer::bos_eos_and_empty_text() {
    Vocabulary v = make_vocab({{kSpace}, {"a"}});
    v.add_eos = true;
    const Tokenizer tok(v);
    QCOMPARE(tok.encode(""), (Ids{1, 2}));
    QCOMPARE(tok.encode("", kNoSpecial), Ids{});
    QCOMPARE(tok.encode("a"), (Ids{1, ids_of(tok, {kSpace})[0], ids_of(tok, {"a"})[0], 2}));
    // A lone space: the dummy prefix and the escaped space.
    QCOMPARE(tok.encode(" ", kNoSpecial), ids_of(tok, {kSpace, kSpace}));
}

void TestTokenizer::no_space_prefix() {
    Vocabulary v = make_vocab({{kSpace}, {"a"}, {"b"}, {kSpace + "b", 1}});
    v.add_space_prefix = false;
    const Tokenizer tok(v);
    QCOMPARE(tok.encode("a b", kNoSpecial), ids_of(tok, {"a", kSpace + "b"}));
    QCOMPARE(tok.decode(tok.encode("a b")), std::string("a b"));
}

void TestTokenizer::decode_strips_or_keeps_dummy_prefix() {
    const Tokenizer tok(make_vocab({{kSpace}, {"a"}, {"b"}, {kSpace + "a", 1}}));
    const Ids ids = tok.encode(" a b"); // <s> ▁ ▁a ▁ b
    QCOMPARE(ids, (Ids{1, ids_of(tok, {kSpace})[0], ids_of(tok, {kSpace + "a"})[0],
                       ids_of(tok, {kSpace})[0], ids_of(tok, {"b"})[0]}));
    QCOMPARE(tok.decode(ids), std::string(" a b"));
    QCOMPARE(tok.decode(ids, {.keep_leading_space = true}), std::string("  a b"));
}

void TestTokenizer::decode_special_tokens() {
    const Tokenizer tok(make_vocab({{kSpace}, {"a"}, {kSpace + "a", 1}}));
    const Ids ids{1, ids_of(tok, {kSpace + "a"})[0], 0, 2};
    QCOMPARE(tok.decode(ids), std::string("a"));
    QCOMPARE(tok.decode(ids, {.render_special = true}), std::string("<s> a<unk></s>"));
    QCOMPARE(tok.token_piece(2), std::string_view());
    QCOMPARE(tok.token_piece(3 + 0x0A), std::string_view("\n"));
}

void TestTokenizer::stream_waits_for_complete_characters() {
    // 你 = E4 BD A0, 🙂 = F0 9F 99 82, each split over byte tokens.
    const Tokenizer tok(make_vocab({{kSpace}, {"a"}}));
    StreamDecoder stream(tok);
    QCOMPARE(stream.push(1), std::string());
    QCOMPARE(stream.push(3 + 0xE4), std::string());
    QCOMPARE(stream.push(3 + 0xBD), std::string());
    QCOMPARE(stream.push(3 + 0xA0), std::string("\xE4\xBD\xA0"));
    QCOMPARE(stream.push(3 + 0xF0), std::string());
    QCOMPARE(stream.push(3 + 0x9F), std::string());
    QCOMPARE(stream.push(3 + 0x99), std::string());
    QCOMPARE(stream.push(3 + 0x82), std::string("\xF0\x9F\x99\x82"));
    QCOMPARE(stream.push(ids_of(tok, {"a"})[0]), std::string("a"));
    QCOMPARE(stream.flush(), std::string());
}

void TestTokenizer::invalid_bytes_become_replacement_characters() {
    const Tokenizer tok(make_vocab({{kSpace}, {"a"}}));
    StreamDecoder stream(tok);
    QCOMPARE(stream.push(3 + 0xFF), kReplacement);             // never in UTF-8
    QCOMPARE(stream.push(3 + 0xE4), std::string());            // may start 你
    QCOMPARE(stream.push(ids_of(tok, {"a"})[0]), kReplacement + "a"); // but did not
    QCOMPARE(stream.push(3 + 0xE4), std::string());
    QCOMPARE(stream.push(3 + 0xBD), std::string());
    QCOMPARE(stream.flush(), kReplacement); // an unfinished character at the end
    // Overlong (C0 80) and surrogate (ED A0 80) forms are ill-formed.
    QCOMPARE(tok.decode(Ids{3 + 0xC0, 3 + 0x80}), kReplacement + kReplacement);
    QCOMPARE(tok.decode(Ids{3 + 0xED, 3 + 0xA0, 3 + 0x80}),
             kReplacement + kReplacement + kReplacement);
}

void TestTokenizer::unicode_standard_replacement_example() {
    // The Unicode Standard, §3.9, Table 3-8 ("U+FFFD for non-shortest form
    // sequences"): 61 F1 80 80 E1 80 C2 62 80 63 80 BF 64 decodes to
    // a FFFD FFFD FFFD b FFFD c FFFD FFFD d.
    const Tokenizer tok(make_vocab({{kSpace}}));
    Ids ids;
    for (const int b : {0x61, 0xF1, 0x80, 0x80, 0xE1, 0x80, 0xC2, 0x62, 0x80, 0x63, 0x80, 0xBF,
                        0x64})
        ids.push_back(3 + b);
    const std::string r = kReplacement;
    QCOMPARE(tok.decode(ids), "a" + r + r + r + "b" + r + "c" + r + r + "d");
}

void TestTokenizer::rejects_bad_vocabularies_data() {
    QTest::addColumn<int>("which");
    QTest::addColumn<QString>("message");
    QTest::newRow("unsupported model") << 0 << "unsupported tokenizer 'bert'";
    QTest::newRow("no tokens") << 1 << "has no tokens";
    QTest::newRow("scores size") << 2 << "tokenizer.ggml.scores has 2 entries";
    QTest::newRow("types size") << 3 << "tokenizer.ggml.token_type has";
    QTest::newRow("type value") << 4 << "has type 9";
    QTest::newRow("nan score") << 5 << "not a finite number";
    QTest::newRow("bos range") << 6 << "tokenizer.ggml.bos_token_id = 1000 is out of range";
    QTest::newRow("add bos without bos") << 7 << "add_bos_token is set";
    QTest::newRow("bad byte token") << 8 << "'<0xZZ>' has type byte";
    QTest::newRow("no bytes no unk") << 9 << "no unknown token";
}

void TestTokenizer::rejects_bad_vocabularies() {
    QFETCH(int, which);
    QFETCH(QString, message);
    Vocabulary v = make_vocab({{kSpace}, {"a"}});
    switch (which) {
    case 0: v.model = "bert"; break;
    case 1:
        v = Vocabulary();
        v.model = "llama";
        break;
    case 2: v.scores.resize(2); break;
    case 3: v.types.pop_back(); break;
    case 4: v.types[259] = 9; break;
    case 5: v.scores[259] = std::nanf(""); break;
    case 6: v.bos = 1000; break;
    case 7: v.bos = -1; break;
    case 8: v.tokens[3] = "<0xZZ>"; break;
    case 9:
        v = make_vocab({{kSpace}}, false);
        v.unk = -1;
        break;
    }
    const QString error = error_of([&] { Tokenizer tok(v); });
    QVERIFY2(error.contains(message), qPrintable(error));
}

void TestTokenizer::rejects_out_of_range_ids() {
    const Tokenizer tok(make_vocab({{kSpace}}));
    QVERIFY(error_of([&] { tok.decode(Ids{1, 5000}); }).contains("token id 5000 is out of range"));
    QVERIFY(!error_of([&] { StreamDecoder(tok).push(-1); }).isEmpty());
}

namespace {

// Writes `gguf` to a temporary file and reads its vocabulary.
Vocabulary read_written(const test::GgufWriter& gguf) {
    const QTemporaryDir dir;
    const std::string path = dir.filePath("vocab.gguf").toStdString();
    gguf.write(path);
    return read_vocabulary(GgufFile(path));
}

test::GgufWriter tiny_llama_vocab() {
    test::GgufWriter gguf;
    gguf.add_string("tokenizer.ggml.model", "llama");
    gguf.add_string_array("tokenizer.ggml.tokens", {"<unk>", "<s>", "</s>", kSpace, "a"});
    return gguf;
}

} // namespace

void TestTokenizer::reads_vocabulary_with_llama_cpp_defaults() {
    // Only the model and the tokens: llama.cpp assumes scores 0, all types
    // normal, <unk> 0, <s> 1, </s> 2, BOS added and the dummy prefix.
    const Vocabulary v = read_written(tiny_llama_vocab());
    QCOMPARE(v.model, std::string("llama"));
    QCOMPARE(v.tokens.size(), std::size_t{5});
    QCOMPARE(v.scores, std::vector<float>(5, 0.0f));
    QCOMPARE(v.types, Ids(5, static_cast<std::int32_t>(TokenType::normal)));
    QCOMPARE(v.unk, 0);
    QCOMPARE(v.bos, 1);
    QCOMPARE(v.eos, 2);
    QCOMPARE(v.pad, -1);
    QVERIFY(v.add_bos && !v.add_eos && v.add_space_prefix);
    const Tokenizer tok(v);
    QCOMPARE(tok.encode("a"), (Ids{1, 3, 4}));
}

void TestTokenizer::reads_vocabulary_keys() {
    test::GgufWriter gguf = tiny_llama_vocab();
    gguf.add_array<float>("tokenizer.ggml.scores", test::GgufWriter::F32, {0, 0, 0, -1, -2});
    gguf.add_array<std::int32_t>("tokenizer.ggml.token_type", test::GgufWriter::I32,
                                 {2, 3, 3, 1, 4});
    gguf.add_u32("tokenizer.ggml.bos_token_id", 2);
    gguf.add_u32("tokenizer.ggml.eos_token_id", 1);
    gguf.add_u32("tokenizer.ggml.unknown_token_id", 4);
    gguf.add_u32("tokenizer.ggml.padding_token_id", 3);
    gguf.add_bool("tokenizer.ggml.add_bos_token", false);
    gguf.add_bool("tokenizer.ggml.add_eos_token", true);
    gguf.add_bool("tokenizer.ggml.add_space_prefix", false);
    const Vocabulary v = read_written(gguf);
    QCOMPARE(v.scores, (std::vector<float>{0, 0, 0, -1, -2}));
    QCOMPARE(v.types, (Ids{2, 3, 3, 1, 4}));
    QCOMPARE(v.bos, 2);
    QCOMPARE(v.eos, 1);
    QCOMPARE(v.unk, 4);
    QCOMPARE(v.pad, 3);
    QVERIFY(!v.add_bos && v.add_eos && !v.add_space_prefix);
}

void TestTokenizer::vocabulary_read_errors() {
    test::GgufWriter no_model;
    no_model.add_string_array("tokenizer.ggml.tokens", {"a"});
    QVERIFY(error_of([&] { read_written(no_model); }).contains("tokenizer.ggml.model is missing"));

    test::GgufWriter no_tokens;
    no_tokens.add_string("tokenizer.ggml.model", "llama");
    QVERIFY(error_of([&] { read_written(no_tokens); }).contains("tokenizer.ggml.tokens is missing"));

    test::GgufWriter huge_id = tiny_llama_vocab();
    huge_id.add_u64("tokenizer.ggml.eos_token_id", 1ull << 40);
    QVERIFY(error_of([&] { read_written(huge_id); }).contains("does not fit a 32-bit token id"));

    test::GgufWriter gpt2;
    gpt2.add_string("tokenizer.ggml.model", "gpt2");
    gpt2.add_string_array("tokenizer.ggml.tokens", {"a"});
    const Vocabulary v = read_written(gpt2);
    QVERIFY(!v.add_bos);
    // A gpt2 vocabulary needs merges (tests/tokenizer/test_tokenizer_bpe.cpp).
    QVERIFY(error_of([&] { Tokenizer tok(v); }).contains("no merges"));
}

QTEST_GUILESS_MAIN(TestTokenizer)
#include "test_tokenizer.moc"
