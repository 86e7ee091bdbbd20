#include "engine/tokenizer/pre_tokenizer.h"

#include <array>
#include <cstddef>
#include <cstdint>

#include "engine/tokenizer/unicode_class.h"

namespace kvscope {
namespace {

using unicode::Char;
using unicode::decode;

// Matchers return the length of the match at `pos`, or 0 when none of the
// pattern's alternatives matches there. `text` is the part being split: its
// end is the end of input for lookaheads, as in regex splitting.
using Matcher = std::size_t (*)(std::string_view text, std::size_t pos);

constexpr std::uint8_t kLetter = unicode::letter;
constexpr std::uint8_t kNumber = unicode::number;
constexpr std::uint8_t kSpace = unicode::whitespace;
constexpr std::uint8_t kMark = unicode::mark;

std::uint8_t flags_of(const Char& c) { return unicode::flags(c); }

// [^\s\p{L}\p{N}] (or [^\s\p{L}\p{M}\p{N}] with marks as letters)
template <std::uint8_t kWord = kLetter>
bool is_other(std::uint8_t f) {
    return (f & (kWord | kNumber | kSpace)) == 0;
}

// End of the run of characters from `pos` whose flags pass `accept`.
template <class Accept>
std::size_t run_end(std::string_view text, std::size_t pos, Accept accept) {
    while (pos < text.size()) {
        const Char c = decode(text, pos);
        if (!accept(flags_of(c))) break;
        pos += c.length;
    }
    return pos;
}

// `kWord` is what a pattern counts as letters: \p{L}, or [\p{L}\p{M}] (qwen35).
template <std::uint8_t kWord = kLetter>
std::size_t letters_end(std::string_view text, std::size_t pos) {
    return run_end(text, pos, [](std::uint8_t f) { return (f & kWord) != 0; });
}
std::size_t numbers_end(std::string_view text, std::size_t pos) {
    return run_end(text, pos, [](std::uint8_t f) { return (f & kNumber) != 0; });
}
template <std::uint8_t kWord = kLetter>
std::size_t others_end(std::string_view text, std::size_t pos) {
    return run_end(text, pos, is_other<kWord>);
}
// [\r\n]* (with_slash: [\r\n/]*)
template <bool with_slash = false>
std::size_t newlines_end(std::string_view text, std::size_t pos) {
    while (pos < text.size() &&
           (text[pos] == '\r' || text[pos] == '\n' || (with_slash && text[pos] == '/')))
        ++pos;
    return pos;
}

char ascii_lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

// 's|'t|'re|'ve|'m|'ll|'d at `pos` (which holds '), optionally ignoring ASCII case.
std::size_t contraction(std::string_view text, std::size_t pos, bool ignore_case) {
    auto at = [&](std::size_t i) -> char {
        if (i >= text.size()) return '\0';
        return ignore_case ? ascii_lower(text[i]) : text[i];
    };
    const char a = at(pos + 1);
    if (a == 's' || a == 't' || a == 'm' || a == 'd') return 2;
    const char b = at(pos + 2);
    if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return 3;
    return 0;
}

// A whitespace run from `pos`: where it ends, where its last character
// starts, and where its last \r or \n is (npos: none).
struct SpaceRun {
    std::size_t end;
    std::size_t last;
    std::size_t last_newline;
};

SpaceRun space_run(std::string_view text, std::size_t pos) {
    SpaceRun r{pos, pos, std::string_view::npos};
    while (r.end < text.size()) {
        const Char c = decode(text, r.end);
        if (!(flags_of(c) & kSpace)) break;
        if (c.cp == '\r' || c.cp == '\n') r.last_newline = r.end;
        r.last = r.end;
        r.end += c.length;
    }
    return r;
}

// \s+(?!\S)|\s+ at a whitespace character: the whole run at the end of the
// text, else all of it but its last character (which then starts the next
// word), else (a single character) that character.
std::size_t trailing_space_rule(std::string_view text, std::size_t pos, const SpaceRun& r) {
    if (r.end == text.size()) return r.end - pos;
    if (r.last > pos) return r.last - pos;
    return r.end - pos;
}

// 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
std::size_t match_gpt2(std::string_view text, std::size_t pos) {
    if (text[pos] == '\'') {
        if (const std::size_t n = contraction(text, pos, false)) return n;
    }
    const Char c = decode(text, pos);
    const std::uint8_t f = flags_of(c);
    if (c.cp == ' ' && pos + 1 < text.size()) {
        const std::uint8_t g = flags_of(decode(text, pos + 1));
        if (g & kLetter) return letters_end(text, pos + 1) - pos;
        if (g & kNumber) return numbers_end(text, pos + 1) - pos;
        if (is_other(g)) return others_end(text, pos + 1) - pos;
    }
    if (f & kLetter) return letters_end(text, pos) - pos;
    if (f & kNumber) return numbers_end(text, pos) - pos;
    if (is_other(f)) return others_end(text, pos) - pos;
    return trailing_space_rule(text, pos, space_run(text, pos));
}

// \p{N}{1,max_digits} at a number.
template <int max_digits>
std::size_t digits_end(std::string_view text, std::size_t pos) {
    for (int i = 0; i < max_digits && pos < text.size(); ++i) {
        const Char d = decode(text, pos);
        if (!(flags_of(d) & kNumber)) break;
        pos += d.length;
    }
    return pos;
}

// The whitespace alternatives \s*[\r\n]+|\s+(?!\S)|\s+ at a whitespace
// character: up to the run's last newline when it has one.
std::size_t space_rules(std::string_view text, std::size_t pos) {
    const SpaceRun r = space_run(text, pos);
    if (r.last_newline != std::string_view::npos) return r.last_newline + 1 - pos;
    return trailing_space_rule(text, pos, r);
}

// (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,max_digits}|
//  ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
// with kWord = kLetter | kMark: [\p{L}\p{M}] for \p{L} (not in the prefix).
template <int max_digits, std::uint8_t kWord = kLetter>
std::size_t match_llama3(std::string_view text, std::size_t pos) {
    if (text[pos] == '\'') {
        if (const std::size_t n = contraction(text, pos, true)) return n;
    }
    const Char c = decode(text, pos);
    const std::uint8_t f = flags_of(c);
    if (f & kWord) return letters_end<kWord>(text, pos) - pos;
    const std::size_t next = pos + c.length;
    if (!(f & kNumber) && c.cp != '\r' && c.cp != '\n' && next < text.size() &&
        (flags_of(decode(text, next)) & kWord))
        return letters_end<kWord>(text, next) - pos;
    if (f & kNumber) return digits_end<max_digits>(text, pos) - pos;
    if (c.cp == ' ' && next < text.size() && is_other<kWord>(flags_of(decode(text, next))))
        return newlines_end(text, others_end<kWord>(text, next)) - pos;
    if (is_other<kWord>(f)) return newlines_end(text, others_end<kWord>(text, pos)) - pos;
    return space_rules(text, pos);
}

// o200k's letter classes: U = [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}] (all but
// lower-case letters, and marks) and W = [\p{Ll}\p{Lm}\p{Lo}\p{M}] (all but
// upper- and title-case letters, and marks).
bool is_upper_class(std::uint8_t f) {
    return ((f & kLetter) && !(f & unicode::lower)) || (f & kMark);
}
bool is_lower_class(std::uint8_t f) {
    return ((f & kLetter) && !(f & unicode::upper)) || (f & kMark);
}

// Where U*W+ starting at `pos` ends, or npos when it does not match. U*
// takes the whole U run first; if W cannot follow, the regex gives back
// characters until one in both classes (Lm, Lo, M) ends the match.
std::size_t upper_then_lower_end(std::string_view text, std::size_t pos) {
    std::size_t last_lower_end = std::string_view::npos;
    while (pos < text.size()) {
        const Char c = decode(text, pos);
        const std::uint8_t f = flags_of(c);
        if (!is_upper_class(f)) break;
        pos += c.length;
        if (is_lower_class(f)) last_lower_end = pos;
    }
    if (pos < text.size() && is_lower_class(flags_of(decode(text, pos))))
        return run_end(text, pos, is_lower_class);
    return last_lower_end;
}

// Where U+W* starting at `pos` ends, or npos when it does not match.
std::size_t upper_run_then_lower_end(std::string_view text, std::size_t pos) {
    const std::size_t upper_end = run_end(text, pos, is_upper_class);
    if (upper_end == pos) return std::string_view::npos;
    return run_end(text, upper_end, is_lower_class);
}

// The two word alternatives of o200k, each tried with the one-character
// prefix [^\r\n\p{L}\p{N}] first and then without, as the regex backtracks;
// an optional contraction follows. 0: neither matches at `pos`.
std::size_t o200k_word(std::string_view text, std::size_t pos) {
    const Char c = decode(text, pos);
    const std::uint8_t f = flags_of(c);
    const bool prefix = !(f & (kLetter | kNumber)) && c.cp != '\r' && c.cp != '\n';
    const std::size_t starts[2] = {prefix ? pos + c.length : pos, pos};
    for (auto word_end : {upper_then_lower_end, upper_run_then_lower_end}) {
        for (const std::size_t start : starts) {
            const std::size_t end = word_end(text, start);
            if (end == std::string_view::npos) continue;
            const std::size_t tail =
                end < text.size() && text[end] == '\'' ? contraction(text, end, true) : 0;
            return end + tail - pos;
        }
    }
    return 0;
}

// o200k: U and W as above,
// [^\r\n\p{L}\p{N}]?U*W+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?U+W*(?i:...)?|
// \p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+
std::size_t match_o200k(std::string_view text, std::size_t pos) {
    if (const std::size_t n = o200k_word(text, pos)) return n;
    const Char c = decode(text, pos);
    const std::uint8_t f = flags_of(c);
    if (f & kNumber) return digits_end<3>(text, pos) - pos;
    const std::size_t next = pos + c.length;
    if (c.cp == ' ' && next < text.size() && is_other(flags_of(decode(text, next))))
        return newlines_end<true>(text, others_end(text, next)) - pos;
    if (is_other(f)) return newlines_end<true>(text, others_end(text, pos)) - pos;
    return space_rules(text, pos);
}

// \p{N}
std::size_t match_one_number(std::string_view text, std::size_t pos) {
    const Char c = decode(text, pos);
    return (flags_of(c) & kNumber) ? c.length : 0;
}

// \p{N}+
std::size_t match_numbers(std::string_view text, std::size_t pos) {
    return numbers_end(text, pos) - pos;
}

// [0-9][0-9][0-9]
std::size_t match_three_digits(std::string_view text, std::size_t pos) {
    auto digit = [&](std::size_t i) { return i < text.size() && text[i] >= '0' && text[i] <= '9'; };
    return digit(pos) && digit(pos + 1) && digit(pos + 2) ? 3 : 0;
}

// [\p{P}\$\+<=>\^~\|]+ (default) and with ` too (falcon).
template <bool with_backtick>
std::size_t match_punctuation(std::string_view text, std::size_t pos) {
    std::size_t end = pos;
    while (end < text.size()) {
        const Char c = decode(text, end);
        const bool extra = c.cp == '$' || c.cp == '+' || c.cp == '<' || c.cp == '=' ||
                           c.cp == '>' || c.cp == '^' || c.cp == '~' || c.cp == '|' ||
                           (with_backtick && c.cp == '`');
        if (!extra && !(flags_of(c) & unicode::punctuation)) break;
        end += c.length;
    }
    return end - pos;
}

// Splits `text` at the matches of `stages[0]`, keeping the text between
// matches, and hands every part to the next stage (or to `words`).
void split(const Matcher* stages, std::size_t n_stages, std::string_view text,
           const WordSink& words) {
    if (text.empty()) return;
    if (n_stages == 0) {
        words(text);
        return;
    }
    const Matcher match = stages[0];
    std::size_t gap = 0; // start of text no match has covered
    for (std::size_t pos = 0; pos < text.size();) {
        const std::size_t n = match(text, pos);
        if (n == 0) {
            pos += decode(text, pos).length;
            continue;
        }
        split(stages + 1, n_stages - 1, text.substr(gap, pos - gap), words);
        split(stages + 1, n_stages - 1, text.substr(pos, n), words);
        pos += n;
        gap = pos;
    }
    split(stages + 1, n_stages - 1, text.substr(gap), words);
}

} // namespace

PreTokenizerChoice choose_pre_tokenizer(std::string_view pre) {
    using K = PreTokenizerKind;
    if (pre.empty() || pre == "default") return {K::default_};
    for (std::string_view name : {"llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1",
                                  "pixtral", "midm-2.0", "lfm2"})
        if (pre == name) return {K::llama3, true, true, true};
    for (std::string_view name : {"dbrx", "smaug-bpe", "chatglm-bpe"})
        if (pre == name) return {K::llama3};
    for (std::string_view name :
         {"qwen2", "deepseek-r1-qwen", "kormo", "f2llmv2", "stablelm2", "hunyuan"})
        if (pre == name) return {K::qwen2};
    if (pre == "qwen35") return {K::qwen35};
    for (std::string_view name : {"gpt-4o", "llama4", "kanana2", "talkie", "minimax-m2"})
        if (pre == name) return {K::gpt4o};
    for (std::string_view name :
         {"smollm", "starcoder", "refact", "command-r", "codeshell", "exaone", "minerva-7b"})
        if (pre == name) return {K::smollm};
    if (pre == "falcon") return {K::falcon};
    for (std::string_view name : {"gpt-2", "gpt2", "phi-2", "mpt", "olmo", "jais", "jina-es",
                                  "jina-de", "jina-v2-es", "jina-v2-de", "jina-v2-code"})
        if (pre == name) return {K::gpt2};
    return {K::gpt2, false, false};
}

std::string_view to_string(PreTokenizerKind kind) {
    switch (kind) {
    case PreTokenizerKind::default_: return "default";
    case PreTokenizerKind::gpt2: return "gpt2";
    case PreTokenizerKind::llama3: return "llama3";
    case PreTokenizerKind::qwen2: return "qwen2";
    case PreTokenizerKind::qwen35: return "qwen35";
    case PreTokenizerKind::gpt4o: return "gpt4o";
    case PreTokenizerKind::smollm: return "smollm";
    case PreTokenizerKind::falcon: return "falcon";
    }
    return "?";
}

void pre_tokenize(PreTokenizerKind kind, std::string_view text,
                  std::vector<std::string_view>& words) {
    auto append = [&words](std::string_view word) { words.push_back(word); };
    pre_tokenize(kind, text, WordSink(append));
}

void pre_tokenize(PreTokenizerKind kind, std::string_view text, WordSink words) {
    static constexpr std::array<Matcher, 1> gpt2{match_gpt2};
    static constexpr std::array<Matcher, 1> llama3{match_llama3<3>};
    static constexpr std::array<Matcher, 1> qwen2{match_llama3<1>};
    static constexpr std::array<Matcher, 1> qwen35{match_llama3<1, kLetter | kMark>};
    static constexpr std::array<Matcher, 1> gpt4o{match_o200k};
    static constexpr std::array<Matcher, 2> smollm{match_one_number, match_gpt2};
    static constexpr std::array<Matcher, 3> falcon{match_punctuation<true>, match_gpt2,
                                                   match_three_digits};
    static constexpr std::array<Matcher, 4> fallback{match_punctuation<false>, match_gpt2,
                                                     match_numbers, match_three_digits};
    switch (kind) {
    case PreTokenizerKind::gpt2: split(gpt2.data(), gpt2.size(), text, words); return;
    case PreTokenizerKind::llama3: split(llama3.data(), llama3.size(), text, words); return;
    case PreTokenizerKind::qwen2: split(qwen2.data(), qwen2.size(), text, words); return;
    case PreTokenizerKind::qwen35: split(qwen35.data(), qwen35.size(), text, words); return;
    case PreTokenizerKind::gpt4o: split(gpt4o.data(), gpt4o.size(), text, words); return;
    case PreTokenizerKind::smollm: split(smollm.data(), smollm.size(), text, words); return;
    case PreTokenizerKind::falcon: split(falcon.data(), falcon.size(), text, words); return;
    case PreTokenizerKind::default_: split(fallback.data(), fallback.size(), text, words); return;
    }
}

} // namespace kvscope
