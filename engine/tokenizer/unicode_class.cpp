#include "engine/tokenizer/unicode_class.h"

#include "engine/tokenizer/utf8.h"

namespace kvscope::unicode {

Char decode_multibyte(std::string_view text, std::size_t pos) {
    const utf8::ScanResult r = utf8::scan(text.substr(pos));
    const auto length = static_cast<std::uint32_t>(r.length);
    if (r.kind != utf8::Scan::complete) return {0xFFFD, length, false};
    const auto* s = reinterpret_cast<const unsigned char*>(text.data() + pos);
    char32_t cp = 0;
    switch (length) {
    case 2: cp = (s[0] & 0x1Fu) << 6 | (s[1] & 0x3Fu); break;
    case 3: cp = (s[0] & 0x0Fu) << 12 | (s[1] & 0x3Fu) << 6 | (s[2] & 0x3Fu); break;
    default:
        cp = (s[0] & 0x07u) << 18 | (s[1] & 0x3Fu) << 12 | (s[2] & 0x3Fu) << 6 | (s[3] & 0x3Fu);
        break;
    }
    return {cp, length, true};
}

} // namespace kvscope::unicode
