// engine/tokenizer: the Unicode classes that pre-tokenizer patterns use
// (\p{L}, \p{N}, \s, \p{P}, \p{S}, \p{M}, and the letter cases \p{Lu},
// \p{Lt}, \p{Ll} that o200k's pattern tells apart), from a table generated
// by tools/gen_unicode_table.py out of Python's unicodedata.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace kvscope::unicode {

enum Flag : std::uint8_t {
    letter = 1,      // general category L* (\p{L})
    number = 2,      // N* (\p{N})
    whitespace = 4,  // the White_Space property (\s)
    punctuation = 8, // P*
    symbol = 16,     // S*
    mark = 32,       // M* (combining marks: not \p{L})
    upper = 64,      // Lu or Lt (with letter)
    lower = 128,     // Ll (with letter); a letter with neither is Lm or Lo
};

// Flags of any code point (unassigned, surrogates, > U+10FFFF: none).
std::uint8_t flags_slow(char32_t cp);

inline std::uint8_t flags(char32_t cp) {
    // ASCII first: most text is mostly ASCII.
    if (cp < 0x80) {
        if (cp >= 'a' && cp <= 'z') return static_cast<std::uint8_t>(letter | lower);
        if (cp >= 'A' && cp <= 'Z') return static_cast<std::uint8_t>(letter | upper);
        if (cp >= '0' && cp <= '9') return number;
        if (cp == ' ' || (cp >= 0x09 && cp <= 0x0D)) return whitespace;
    }
    return flags_slow(cp);
}

// One character of UTF-8 text. An ill-formed sequence (a maximal subpart,
// Unicode §3.9) is one character of its own with `valid` false and no
// flags, so pre-tokenizers treat it like a symbol and byte-level BPE keeps
// its bytes.
struct Char {
    char32_t cp;
    std::uint32_t length; // bytes
    bool valid;
};

Char decode_multibyte(std::string_view text, std::size_t pos);

// The character at `pos` (< text.size()).
inline Char decode(std::string_view text, std::size_t pos) {
    const auto b = static_cast<unsigned char>(text[pos]);
    if (b < 0x80) return {b, 1, true};
    return decode_multibyte(text, pos);
}

// Flags of a decoded character: none for an ill-formed one.
inline std::uint8_t flags(const Char& c) { return c.valid ? flags(c.cp) : 0; }

} // namespace kvscope::unicode
