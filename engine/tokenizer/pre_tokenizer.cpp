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

std::uint8_t flags_of(const Char& c) { return unicode::flags(c); }

// [^\s\p{L}\p{N}]
bool is_other(std::uint8_t f) { return (f & (kLetter | kNumber | kSpace)) == 0; }

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

std::size_t letters_end(std::string_view text, std::size_t pos) {
    return run_end(text, pos, [](std::uint8_t f) { return (f & kLetter) != 0; });
}
std::size_t numbers_end(std::string_view text, std::size_t pos) {
    return run_end(text, pos, [](std::uint8_t f) { return (f & kNumber) != 0; });
}
std::size_t others_end(std::string_view text, std::size_t pos) {
    return run_end(text, pos, is_other);
}
std::size_t newlines_end(std::string_view text, std::size_t pos) {
    while (pos < text.size() && (text[pos] == '\r' || text[pos] == '\n')) ++pos;
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

// (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,max_digits}|
//  ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
template <int max_digits>
std::size_t match_llama3(std::string_view text, std::size_t pos) {
    if (text[pos] == '\'') {
        if (const std::size_t n = contraction(text, pos, true)) return n;
    }
    const Char c = decode(text, pos);
    const std::uint8_t f = flags_of(c);
    if (f & kLetter) return letters_end(text, pos) - pos;
    const std::size_t next = pos + c.length;
    if (!(f & kNumber) && c.cp != '\r' && c.cp != '\n' && next < text.size() &&
        (flags_of(decode(text, next)) & kLetter))
        return letters_end(text, next) - pos;
    if (f & kNumber) {
        std::size_t end = pos;
        for (int i = 0; i < max_digits && end < text.size(); ++i) {
            const Char d = decode(text, end);
            if (!(flags_of(d) & kNumber)) break;
            end += d.length;
        }
        return end - pos;
    }
    if (c.cp == ' ' && next < text.size() && is_other(flags_of(decode(text, next))))
        return newlines_end(text, others_end(text, next)) - pos;
    if (is_other(f)) return newlines_end(text, others_end(text, pos)) - pos;
    const SpaceRun r = space_run(text, pos);
    if (r.last_newline != std::string_view::npos) return r.last_newline + 1 - pos;
    return trailing_space_rule(text, pos, r);
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
    if (pre.empty() || pre == "default") return {K::default_, false, true};
    for (std::string_view name : {"llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1",
                                  "pixtral", "midm-2.0", "lfm2"})
        if (pre == name) return {K::llama3, true, true};
    for (std::string_view name : {"dbrx", "smaug-bpe", "chatglm-bpe"})
        if (pre == name) return {K::llama3, false, true};
    for (std::string_view name : {"qwen2", "stablelm2", "hunyuan"})
        if (pre == name) return {K::qwen2, false, true};
    for (std::string_view name :
         {"smollm", "starcoder", "refact", "command-r", "codeshell", "exaone", "minerva-7b"})
        if (pre == name) return {K::smollm, false, true};
    if (pre == "falcon") return {K::falcon, false, true};
    for (std::string_view name : {"gpt-2", "gpt2", "phi-2", "mpt", "olmo", "jais", "jina-es",
                                  "jina-de", "jina-v2-es", "jina-v2-de", "jina-v2-code"})
        if (pre == name) return {K::gpt2, false, true};
    return {K::gpt2, false, false};
}

std::string_view to_string(PreTokenizerKind kind) {
    switch (kind) {
    case PreTokenizerKind::default_: return "default";
    case PreTokenizerKind::gpt2: return "gpt2";
    case PreTokenizerKind::llama3: return "llama3";
    case PreTokenizerKind::qwen2: return "qwen2";
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
    static constexpr std::array<Matcher, 2> smollm{match_one_number, match_gpt2};
    static constexpr std::array<Matcher, 3> falcon{match_punctuation<true>, match_gpt2,
                                                   match_three_digits};
    static constexpr std::array<Matcher, 4> fallback{match_punctuation<false>, match_gpt2,
                                                     match_numbers, match_three_digits};
    switch (kind) {
    case PreTokenizerKind::gpt2: split(gpt2.data(), gpt2.size(), text, words); return;
    case PreTokenizerKind::llama3: split(llama3.data(), llama3.size(), text, words); return;
    case PreTokenizerKind::qwen2: split(qwen2.data(), qwen2.size(), text, words); return;
    case PreTokenizerKind::smollm: split(smollm.data(), smollm.size(), text, words); return;
    case PreTokenizerKind::falcon: split(falcon.data(), falcon.size(), text, words); return;
    case PreTokenizerKind::default_: split(fallback.data(), fallback.size(), text, words); return;
    }
}

} // namespace kvscope
