// Byte-level BPE and its pre-tokenizers on small hand-made inputs, every
// expectation worked out by hand from the rules: the pre-tokenizers'
// regular expressions (see engine/tokenizer/pre_tokenizer.h), GPT-2's
// byte-to-unicode map, merge order by rank (leftmost on ties), strings that
// only merges form, whole-word lookup (ignore_merges), special and
// end-of-turn tokens, and the GGUF keys.
#include <QtTest>

#include <string>
#include <vector>

#include <QTemporaryDir>

#include "engine/core/error.h"
#include "engine/model/gguf_file.h"
#include "engine/tokenizer/bpe_tokenizer.h"
#include "engine/tokenizer/pre_tokenizer.h"
#include "engine/tokenizer/tokenizer.h"
#include "engine/tokenizer/unicode_class.h"
#include "model/gguf_writer.h"
#include "tokenizer_test_support.h"

using namespace kvscope;

namespace {

using Words = std::vector<std::string>;

Words words_of(PreTokenizerKind kind, std::string_view text) {
    std::vector<std::string_view> views;
    pre_tokenize(kind, text, views);
    return Words(views.begin(), views.end());
}

std::string utf8_of(char32_t cp) {
    std::string s;
    if (cp < 0x80) {
        s += static_cast<char>(cp);
    } else if (cp < 0x800) {
        s += static_cast<char>(0xC0 | (cp >> 6));
        s += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
        s += static_cast<char>(0xE0 | (cp >> 12));
        s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        s += static_cast<char>(0x80 | (cp & 0x3F));
    }
    return s;
}

// A token string in GPT-2's byte-to-unicode form.
std::string mapped(std::string_view bytes) {
    std::string s;
    for (const char c : bytes) s += utf8_of(gpt2_byte_to_code_point(static_cast<std::uint8_t>(c)));
    return s;
}

// Ids 0..255: the single bytes (as GPT-2 orders them does not matter here:
// id = byte), then `extra` tokens (raw bytes, stored mapped), then the
// control tokens <|endoftext|> and <|im_end|>. Merges are raw "left right"
// byte strings, stored mapped.
struct HandVocab {
    Vocabulary v;
    std::int32_t id(std::string_view raw) const {
        const std::string m = mapped(raw);
        for (std::size_t i = 0; i < v.tokens.size(); ++i)
            if (v.tokens[i] == m && v.types[i] == 1) return static_cast<std::int32_t>(i);
        qFatal("no token %s", std::string(raw).c_str());
    }
};

HandVocab make_bpe(const std::vector<std::string>& extra,
                   const std::vector<std::pair<std::string, std::string>>& merges,
                   std::string pre = "gpt-2") {
    HandVocab h;
    Vocabulary& v = h.v;
    v.model = "gpt2";
    v.pre = std::move(pre);
    auto add = [&v](std::string text, TokenType type) {
        v.tokens.push_back(std::move(text));
        v.types.push_back(static_cast<std::int32_t>(type));
    };
    for (int b = 0; b < 256; ++b) add(mapped(std::string(1, static_cast<char>(b))), TokenType::normal);
    for (const std::string& t : extra) add(mapped(t), TokenType::normal);
    add("<|endoftext|>", TokenType::control);
    add("<|im_end|>", TokenType::control);
    for (const auto& [l, r] : merges) v.merges.push_back(mapped(l) + " " + mapped(r));
    v.eos = static_cast<std::int32_t>(v.tokens.size()) - 2;
    v.bos = v.eos;
    return h;
}

template <typename F>
QString error_of(F make) {
    try {
        make();
    } catch (const Error& e) {
        return QString::fromUtf8(e.what());
    }
    return {};
}

Vocabulary read_written(const test::GgufWriter& gguf) {
    const QTemporaryDir dir;
    const std::string path = dir.filePath("vocab.gguf").toStdString();
    gguf.write(path);
    return read_vocabulary(GgufFile(path));
}

} // namespace

class TestTokenizerBpe : public QObject {
    Q_OBJECT
private slots:
    void unicode_classes();
    void byte_to_unicode_map();
    void gpt2_words();
    void llama3_words();
    void qwen2_and_smollm_digits();
    void gpt4o_words();
    void qwen35_marks_are_letters();
    void default_and_falcon_stages();
    void pre_tokenizer_names();
    void lowest_rank_merges_first();
    void equal_ranks_merge_leftmost();
    void strings_only_merges_form_fall_back_to_bytes();
    void whole_word_lookup_with_ignore_merges();
    void ill_formed_utf8_keeps_its_bytes();
    void long_words_merge_like_short_ones();
    void special_tokens_and_stop_tokens();
    void decodes_tokens_outside_the_byte_map_as_text();
    void unknown_pre_tokenizer_falls_back_to_gpt2();
    void reads_bpe_keys();
    void rejects_bpe_without_merges();
};

void TestTokenizerBpe::unicode_classes() {
    using namespace unicode;
    auto both = [](Flag a, Flag b) { return static_cast<std::uint8_t>(a | b); };
    QCOMPARE(flags(U'a'), both(letter, lower));
    QCOMPARE(flags(U'Q'), both(letter, upper));
    QCOMPARE(flags(U'\u0416'), both(letter, upper)); // Ж (Lu)
    QCOMPARE(flags(U'\u01C5'), both(letter, upper)); // ǅ (Lt)
    QCOMPARE(flags(U'\u00DF'), both(letter, lower)); // ß (Ll)
    QCOMPARE(flags(U'\u02B0'), std::uint8_t{letter}); // ʰ (Lm): neither case
    QCOMPARE(flags(U'7'), std::uint8_t{number});
    QCOMPARE(flags(U'\u00B2'), std::uint8_t{number});   // ² is \p{N} (No)
    QCOMPARE(flags(U'\u0661'), std::uint8_t{number});   // Arabic-Indic one
    QCOMPARE(flags(U'\u00A0'), std::uint8_t{whitespace}); // no-break space
    QCOMPARE(flags(U'\u3000'), std::uint8_t{whitespace}); // ideographic space
    QCOMPARE(flags(U'\u0085'), std::uint8_t{whitespace});
    QCOMPARE(flags(U'\u200B'), std::uint8_t{0});           // zero width space is Cf, not \s
    QCOMPARE(flags(U'\u0301'), std::uint8_t{mark});        // combining acute: not \p{L}
    QCOMPARE(flags(U'\U0001D518'), both(letter, upper));  // 𝔘 (Lu)
    QCOMPARE(flags(U'\uAC00'), std::uint8_t{letter});      // 가
    QCOMPARE(flags(U'!'), std::uint8_t{punctuation});
    QCOMPARE(flags(U'+'), std::uint8_t{symbol});
    QCOMPARE(flags(U'\U0001F355'), std::uint8_t{symbol});  // 🍕
    QCOMPARE(flags(char32_t{0x110000}), std::uint8_t{0});
    const Char bad = decode("\xE4\xBD", 0); // truncated 你
    QVERIFY(!bad.valid);
    QCOMPARE(bad.length, 2u);
    const Char good = decode("\xF0\x9D\x94\x98", 0);
    QVERIFY(good.valid);
    QCOMPARE(good.cp, U'\U0001D518');
}

void TestTokenizerBpe::byte_to_unicode_map() {
    QCOMPARE(gpt2_byte_to_code_point(' '), U'\u0120');  // Ġ
    QCOMPARE(gpt2_byte_to_code_point('\n'), U'\u010A'); // Ċ
    QCOMPARE(gpt2_byte_to_code_point('\t'), U'\u0109');
    QCOMPARE(gpt2_byte_to_code_point('\r'), U'\u010D');
    QCOMPARE(gpt2_byte_to_code_point(0), U'\u0100');
    QCOMPARE(gpt2_byte_to_code_point('A'), U'A');
    QCOMPARE(gpt2_byte_to_code_point(0xAD), U'\u0143'); // the 68th byte mapped
    QCOMPARE(gpt2_byte_to_code_point(0xAE), U'\u00AE');
    for (int b = 0; b < 256; ++b) {
        const std::string raw(1, static_cast<char>(b));
        QCOMPARE(gpt2_string_to_bytes(mapped(raw)).value(), raw);
    }
    QVERIFY(!gpt2_string_to_bytes("a b").has_value()); // a real space is not in the map
    QVERIFY(!gpt2_string_to_bytes("\xE2\x96\x81").has_value());
}

void TestTokenizerBpe::gpt2_words() {
    const auto k = PreTokenizerKind::gpt2;
    QCOMPARE(words_of(k, "Hello world"), (Words{"Hello", " world"}));
    QCOMPARE(words_of(k, "a   b"), (Words{"a", "  ", " b"}));
    QCOMPARE(words_of(k, "trailing  "), (Words{"trailing", "  "}));
    QCOMPARE(words_of(k, "THEY'LL I'm it's"), (Words{"THEY", "'", "LL", " I", "'m", " it", "'s"}));
    QCOMPARE(words_of(k, " 1234 x\u00B2"), (Words{" 1234", " x", "\u00B2"}));
    QCOMPARE(words_of(k, "\n\n\nline"), (Words{"\n\n", "\n", "line"}));
    QCOMPARE(words_of(k, "e\u0301t\u00E9"), (Words{"e", "\u0301", "t\u00E9"}));
    QCOMPARE(words_of(k, " <|endoftext|>"), (Words{" <|", "endoftext", "|>"}));
    QCOMPARE(words_of(k, "?'s"), (Words{"?'", "s"}));
    QCOMPARE(words_of(k, "a\u3000b"), (Words{"a", "\u3000", "b"})); // only ' ' joins a word
    QCOMPARE(words_of(k, "x  \n  "), (Words{"x", "  \n  "}));
    QCOMPARE(words_of(k, " "), (Words{" "}));
    QCOMPARE(words_of(k, ""), Words{});
}

void TestTokenizerBpe::llama3_words() {
    const auto k = PreTokenizerKind::llama3;
    QCOMPARE(words_of(k, "1234 12345"), (Words{"123", "4", " ", "123", "45"}));
    QCOMPARE(words_of(k, "<s> and </s>"), (Words{"<s", ">", " and", " </", "s", ">"}));
    QCOMPARE(words_of(k, " <|endoftext|>"), (Words{" <|", "endoftext", "|>"}));
    QCOMPARE(words_of(k, "two\r\nthree\n\n\nfour"),
             (Words{"two", "\r\n", "three", "\n\n\n", "four"}));
    QCOMPARE(words_of(k, "THEY'LL we'Re"), (Words{"THEY", "'LL", " we", "'Re"}));
    QCOMPARE(words_of(k, "a   b"), (Words{"a", "  ", " b"}));
    QCOMPARE(words_of(k, "x  \n  "), (Words{"x", "  \n", "  "}));
    QCOMPARE(words_of(k, "tabs\tand\t\tx"), (Words{"tabs", "\tand", "\t", "\tx"}));
    QCOMPARE(words_of(k, "add(int a"), (Words{"add", "(int", " a"}));
    QCOMPARE(words_of(k, "end.\n\nNext"), (Words{"end", ".\n\n", "Next"}));
    QCOMPARE(words_of(k, "\u00E9\u0301x"), (Words{"\u00E9", "\u0301x"})); // a mark may lead a word
}

void TestTokenizerBpe::qwen2_and_smollm_digits() {
    QCOMPARE(words_of(PreTokenizerKind::qwen2, "x 1234"), (Words{"x", " ", "1", "2", "3", "4"}));
    QCOMPARE(words_of(PreTokenizerKind::qwen2, "We're"), (Words{"We", "'re"}));
    // SmolLM: every digit alone first, then GPT-2's rules on each part.
    QCOMPARE(words_of(PreTokenizerKind::smollm, " 123 abc"), (Words{" ", "1", "2", "3", " abc"}));
    QCOMPARE(words_of(PreTokenizerKind::smollm, "x1y"), (Words{"x", "1", "y"}));
    QCOMPARE(words_of(PreTokenizerKind::smollm, "THEY'LL"), (Words{"THEY", "'", "LL"}));
}

void TestTokenizerBpe::gpt4o_words() {
    // o200k: a word is lower-case letters after any capitals, or capitals
    // with lower-case after them, so case changes cut words; Lm/Lo letters
    // and marks go with either; contractions stay on the word.
    const auto k = PreTokenizerKind::gpt4o;
    QCOMPARE(words_of(k, "helloWorld XMLHttpRequest iPhone"),
             (Words{"hello", "World", " XMLHttp", "Request", " i", "Phone"}));
    QCOMPARE(words_of(k, "HELLO world HELLOworld"), (Words{"HELLO", " world", " HELLOworld"}));
    QCOMPARE(words_of(k, "\u043F\u0440\u0438\u0412\u0435\u0442"), // приВет
             (Words{"\u043F\u0440\u0438", "\u0412\u0435\u0442"}));
    const std::string namaste = "\u0928\u092E\u0938\u094D\u0924\u0947"; // नमस्ते
    QCOMPARE(words_of(k, namaste + " x"), (Words{namaste, " x"})); // its marks stay
    // e + combining acute, title-case Dž, modifier letter small h
    QCOMPARE(words_of(k, "e\u0301cole \u01C5ungla \u02B0ello"),
             (Words{"e\u0301cole", " \u01C5ungla", " \u02B0ello"}));
    QCOMPARE(words_of(k, "I'M they'Re don't"), (Words{"I'M", " they'Re", " don't"}));
    QCOMPARE(words_of(k, "12345 x"), (Words{"123", "45", " x"}));
    QCOMPARE(words_of(k, "a/b\n/c !\r\n/x"), (Words{"a", "/b", "\n", "/c", " !\r\n/", "x"}));
    QCOMPARE(words_of(k, "x  \n  "), (Words{"x", "  \n", "  "}));
}

void TestTokenizerBpe::qwen35_marks_are_letters() {
    // Qwen 3.5 counts combining marks as letters; Qwen 2/3 cut at them.
    const std::string namaste = "\u0928\u092E\u0938\u094D\u0924\u0947"; // नमस्ते
    QCOMPARE(words_of(PreTokenizerKind::qwen35, namaste + " x1"), (Words{namaste, " x", "1"}));
    QCOMPARE(words_of(PreTokenizerKind::qwen2, namaste),
             (Words{"\u0928\u092E\u0938", "\u094D\u0924", "\u0947"}));
    QCOMPARE(words_of(PreTokenizerKind::qwen35, "e\u0301 x\u0301"),
             (Words{"e\u0301", " x\u0301"}));
}

void TestTokenizerBpe::default_and_falcon_stages() {
    // [\p{P}$+<=>^~|]+ first, then GPT-2's rules, \p{N}+, [0-9]{3}.
    QCOMPARE(words_of(PreTokenizerKind::default_, "a+b=12345!"),
             (Words{"a", "+", "b", "=", "123", "45", "!"}));
    QCOMPARE(words_of(PreTokenizerKind::default_, "x 1234"), (Words{"x", " ", "123", "4"}));
    QCOMPARE(words_of(PreTokenizerKind::falcon, "`a` 1234"),
             (Words{"`", "a", "`", " ", "123", "4"}));
}

void TestTokenizerBpe::pre_tokenizer_names() {
    auto kind = [](std::string_view pre) { return choose_pre_tokenizer(pre).kind; };
    QCOMPARE(kind("gpt-2"), PreTokenizerKind::gpt2);
    QCOMPARE(kind("gpt2"), PreTokenizerKind::gpt2);
    QCOMPARE(kind("llama-bpe"), PreTokenizerKind::llama3);
    QCOMPARE(kind("llama3"), PreTokenizerKind::llama3);
    QCOMPARE(kind("qwen2"), PreTokenizerKind::qwen2); // Qwen 2, 2.5 and 3
    QCOMPARE(kind("qwen35"), PreTokenizerKind::qwen35);
    QCOMPARE(kind("gpt-4o"), PreTokenizerKind::gpt4o); // gpt-oss, Phi-4-mini
    QCOMPARE(kind("llama4"), PreTokenizerKind::gpt4o);
    QCOMPARE(kind("smollm"), PreTokenizerKind::smollm);
    QCOMPARE(kind("default"), PreTokenizerKind::default_);
    QCOMPARE(kind(""), PreTokenizerKind::default_);
    QVERIFY(choose_pre_tokenizer("llama-bpe").ignore_merges);
    QVERIFY(!choose_pre_tokenizer("qwen2").ignore_merges);
    QVERIFY(!choose_pre_tokenizer("gpt-4o").ignore_merges);
    // llama.cpp adds BOS when the file does not say for Llama 3 (SmolLM3 too).
    QVERIFY(choose_pre_tokenizer("llama-bpe").add_bos_by_default);
    QVERIFY(!choose_pre_tokenizer("qwen2").add_bos_by_default);
    QVERIFY(!choose_pre_tokenizer("gpt-4o").add_bos_by_default);
    QVERIFY(choose_pre_tokenizer("smollm").known);
    const PreTokenizerChoice unknown = choose_pre_tokenizer("mystery-9000");
    QCOMPARE(unknown.kind, PreTokenizerKind::gpt2);
    QVERIFY(!unknown.known);
}

void TestTokenizerBpe::lowest_rank_merges_first() {
    // "abc": (b,c) has rank 0 and goes first although (a,b) is leftmost;
    // then "a bc" (rank 2) makes "abc". "abx" only has "a b".
    const HandVocab h = make_bpe({"ab", "bc", "abc"}, {{"b", "c"}, {"a", "b"}, {"a", "bc"}});
    const Tokenizer tok(h.v);
    QCOMPARE(tok.encode("abc"), (Ids{h.id("abc")}));
    QCOMPARE(tok.encode("abx"), (Ids{h.id("ab"), 'x'}));
    QCOMPARE(tok.encode("xbc"), (Ids{'x', h.id("bc")}));
    QCOMPARE(tok.decode(tok.encode("abc abx")), std::string("abc abx"));
}

void TestTokenizerBpe::equal_ranks_merge_leftmost() {
    // "aaa": both pairs are "a a"; the left one merges: "aa", "a".
    const HandVocab h = make_bpe({"aa", "aaaa"}, {{"a", "a"}, {"aa", "aa"}});
    const Tokenizer tok(h.v);
    QCOMPARE(tok.encode("aaa"), (Ids{h.id("aa"), 'a'}));
    QCOMPARE(tok.encode("aaaaa"), (Ids{h.id("aaaa"), 'a'}));
    QCOMPARE(tok.encode("aaaaaa"), (Ids{h.id("aaaa"), h.id("aa")}));
}

void TestTokenizerBpe::strings_only_merges_form_fall_back_to_bytes() {
    // "xy" is merged but is no token: alone it becomes its bytes' tokens;
    // followed by "z" it merges on into the token "xyz".
    const HandVocab h = make_bpe({"xyz"}, {{"x", "y"}, {"xy", "z"}});
    const Tokenizer tok(h.v);
    QCOMPARE(tok.encode("xy"), (Ids{'x', 'y'}));
    QCOMPARE(tok.encode("xyz"), (Ids{h.id("xyz")}));
    QCOMPARE(tok.encode("xyxy"), (Ids{'x', 'y', 'x', 'y'}));
}

void TestTokenizerBpe::whole_word_lookup_with_ignore_merges() {
    // "abd" is a token no merge reaches. Llama 3 (ignore_merges) takes a
    // word that is a token whole; GPT-2 merges: "ab", "d".
    const std::vector<std::string> extra{"ab", "abd"};
    const std::vector<std::pair<std::string, std::string>> merges{{"a", "b"}};
    const HandVocab gpt2 = make_bpe(extra, merges, "gpt-2");
    const HandVocab llama3 = make_bpe(extra, merges, "llama-bpe");
    QCOMPARE(Tokenizer(gpt2.v).encode("abd"), (Ids{gpt2.id("ab"), 'd'}));
    QCOMPARE(Tokenizer(llama3.v).encode("abd"), (Ids{llama3.id("abd")}));
    QCOMPARE(Tokenizer(llama3.v).encode("abdd"), (Ids{llama3.id("ab"), 'd', 'd'}));
}

void TestTokenizerBpe::ill_formed_utf8_keeps_its_bytes() {
    const HandVocab h = make_bpe({}, {{"a", "b"}});
    const Tokenizer tok(h.v);
    const std::string bytes = "a\xFF\xE4\xBD" "b\xC0";
    const Ids ids = tok.encode(bytes);
    QCOMPARE(ids, (Ids{'a', 0xFF, 0xE4, 0xBD, 'b', 0xC0}));
    QCOMPARE(tok.decode(ids), std::string("a\xEF\xBF\xBD\xEF\xBF\xBD" "b\xEF\xBF\xBD"));
}

void TestTokenizerBpe::long_words_merge_like_short_ones() {
    // Words longer than the short-word path take the heap; both must agree.
    const HandVocab h = make_bpe({"aa", "aaaa", "aaaaaaaa"}, {{"a", "a"}, {"aa", "aa"}, {"aaaa", "aaaa"}});
    const Tokenizer tok(h.v);
    for (int n = 1; n <= 200; ++n) {
        const Ids ids = tok.encode(std::string(static_cast<std::size_t>(n), 'a'));
        Ids expected(static_cast<std::size_t>(n / 8), h.id("aaaaaaaa"));
        if (n % 8 >= 4) expected.push_back(h.id("aaaa"));
        if (n % 4 >= 2) expected.push_back(h.id("aa"));
        if (n % 2) expected.push_back('a');
        QCOMPARE(ids, expected);
    }
}

void TestTokenizerBpe::special_tokens_and_stop_tokens() {
    HandVocab h = make_bpe({}, {{"a", "b"}});
    const auto eot = static_cast<std::int32_t>(h.v.tokens.size()) - 1; // <|im_end|>
    const Tokenizer tok(h.v);
    QCOMPARE(tok.encode("a<|im_end|>", {.parse_special = true}), (Ids{'a', eot}));
    QCOMPARE(tok.encode("<|im_end|>"), (Ids{'<', '|', 'i', 'm', '_', 'e', 'n', 'd', '|', '>'}));
    QCOMPARE(tok.stop_tokens(), (Ids{eot - 1, eot}));
    QVERIFY(!tok.vocabulary().add_bos);
    QCOMPARE(tok.encode("ab"), (Ids{'a', 'b'})); // merged, but "ab" is no token here
    // tokenizer.ggml.eot_token_id joins the stop tokens.
    h.v.eot = 'x';
    QCOMPARE(Tokenizer(h.v).stop_tokens(), (Ids{'x', eot - 1, eot}));
}

void TestTokenizerBpe::decodes_tokens_outside_the_byte_map_as_text() {
    // Some converted vocabularies hold normal tokens with characters GPT-2's
    // map lacks; they decode as their own text and merges never make them.
    HandVocab h = make_bpe({}, {{"a", "b"}});
    h.v.tokens.push_back("\xE2\x96\x81x"); // ▁x
    h.v.types.push_back(1);
    h.v.tokens.push_back("<tool>");
    h.v.types.push_back(static_cast<std::int32_t>(TokenType::user_defined));
    const Tokenizer tok(h.v);
    const auto n = tok.n_tokens();
    QCOMPARE(tok.decode(Ids{n - 2}), std::string("\xE2\x96\x81x"));
    // User-defined tokens always match, as text.
    QCOMPARE(tok.encode("a<tool>"), (Ids{'a', n - 1}));
    QCOMPARE(tok.decode(Ids{'a', n - 1}), std::string("a<tool>"));
}

void TestTokenizerBpe::unknown_pre_tokenizer_falls_back_to_gpt2() {
    const HandVocab h = make_bpe({}, {{"a", "b"}}, "mystery-9000");
    // A warning is logged; the words are GPT-2's: " 1234" stays one word,
    // which here is its five byte tokens.
    const Tokenizer tok(h.v);
    QCOMPARE(tok.encode(" 1234"), (Ids{' ', '1', '2', '3', '4'}));
}

void TestTokenizerBpe::reads_bpe_keys() {
    test::GgufWriter gguf;
    gguf.add_string("tokenizer.ggml.model", "gpt2");
    gguf.add_string("tokenizer.ggml.pre", "qwen2");
    gguf.add_string_array("tokenizer.ggml.tokens", {"a", "b", "ab", "<|im_end|>", "<|endoftext|>"});
    gguf.add_array<std::int32_t>("tokenizer.ggml.token_type", test::GgufWriter::I32, {1, 1, 1, 3, 3});
    gguf.add_string_array("tokenizer.ggml.merges", {"a b"});
    gguf.add_u32("tokenizer.ggml.eos_token_id", 4);
    gguf.add_u32("tokenizer.ggml.eot_token_id", 3);
    gguf.add_u32("tokenizer.ggml.eom_token_id", 2);
    const Vocabulary v = read_written(gguf);
    QCOMPARE(v.pre, std::string("qwen2"));
    QCOMPARE(v.merges, (std::vector<std::string>{"a b"}));
    QCOMPARE(v.eos, 4);
    QCOMPARE(v.eot, 3);
    QCOMPARE(v.eom, 2);
    QCOMPARE(v.bos, -1);
    QVERIFY(!v.add_bos && !v.add_space_prefix); // gpt2 defaults
    QVERIFY(v.scores.size() == 5);
    const Tokenizer tok(v);
    QCOMPARE(tok.encode("ab"), (Ids{2}));
    QCOMPARE(tok.stop_tokens(), (Ids{2, 3, 4}));

    gguf.add_bool("tokenizer.ggml.add_bos_token", true);
    gguf.add_u32("tokenizer.ggml.bos_token_id", 4);
    const Tokenizer with_bos(read_written(gguf));
    QCOMPARE(with_bos.encode("ab"), (Ids{4, 2}));
    QCOMPARE(with_bos.encode("ab", {.add_special = false}), (Ids{2}));
}

void TestTokenizerBpe::rejects_bpe_without_merges() {
    Vocabulary v = make_bpe({}, {}).v;
    v.merges.clear();
    QVERIFY(error_of([&] { Tokenizer tok(v); }).contains("no merges"));
    v = make_bpe({}, {{"a", "b"}}).v;
    v.eot = 1 << 20;
    QVERIFY(error_of([&] { Tokenizer tok(v); }).contains("eot_token_id"));
}

QTEST_GUILESS_MAIN(TestTokenizerBpe)
#include "test_tokenizer_bpe.moc"
