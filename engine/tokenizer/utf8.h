// engine/tokenizer: UTF-8 well-formedness as the Unicode standard defines it
// (Table 3-7), for splitting text into characters and for decoding byte
// streams that may stop in the middle of a character.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace kvscope::utf8 {

enum class Scan {
    complete,  // a well-formed character
    invalid,   // an ill-formed sequence (a "maximal subpart", >= 1 byte)
    truncated, // a well-formed start that the input ends before completing
};

struct ScanResult {
    Scan kind;
    std::size_t length; // bytes of the character, subpart or truncated start
};

// Classifies the bytes at the front of a non-empty `bytes`.
ScanResult scan(std::string_view bytes);

// Appends the text of `bytes` to `out`, each ill-formed subpart as one U+FFFD
// (the replacement practice of Unicode §3.9 that browsers and Python follow).
// A truncated character at the end is left unread unless `final`, where it
// becomes U+FFFD too. Returns how many bytes were read.
std::size_t append_text(std::string_view bytes, bool final, std::string& out);

inline constexpr std::string_view replacement_character = "\xEF\xBF\xBD";

} // namespace kvscope::utf8
