#include "engine/tokenizer/utf8.h"

#include <cstdint>

namespace kvscope::utf8 {
namespace {

struct ByteRange {
    std::uint8_t lo, hi;
};

// Table 3-7: the lead byte fixes the length and the range of the second byte;
// later bytes are always 80..BF. Ranges below exclude overlong forms,
// surrogates (ED A0..BF) and code points above U+10FFFF.
struct LeadRule {
    std::size_t length;  // 0 = not a lead byte
    ByteRange second;
};

LeadRule lead_rule(std::uint8_t b) {
    if (b < 0x80) return {1, {0, 0}};
    if (b >= 0xC2 && b <= 0xDF) return {2, {0x80, 0xBF}};
    if (b == 0xE0) return {3, {0xA0, 0xBF}};
    if (b == 0xED) return {3, {0x80, 0x9F}};
    if (b >= 0xE1 && b <= 0xEF) return {3, {0x80, 0xBF}};
    if (b == 0xF0) return {4, {0x90, 0xBF}};
    if (b >= 0xF1 && b <= 0xF3) return {4, {0x80, 0xBF}};
    if (b == 0xF4) return {4, {0x80, 0x8F}};
    return {0, {0, 0}};
}

} // namespace

ScanResult scan(std::string_view bytes) {
    const LeadRule rule = lead_rule(static_cast<std::uint8_t>(bytes[0]));
    if (rule.length == 0) return {Scan::invalid, 1};
    for (std::size_t i = 1; i < rule.length; ++i) {
        if (i == bytes.size()) return {Scan::truncated, i};
        const ByteRange range = i == 1 ? rule.second : ByteRange{0x80, 0xBF};
        const auto b = static_cast<std::uint8_t>(bytes[i]);
        if (b < range.lo || b > range.hi) return {Scan::invalid, i};
    }
    return {Scan::complete, rule.length};
}

std::size_t append_text(std::string_view bytes, bool final, std::string& out) {
    std::size_t pos = 0;
    while (pos < bytes.size()) {
        const ScanResult r = scan(bytes.substr(pos));
        if (r.kind == Scan::truncated && !final) break;
        if (r.kind == Scan::complete)
            out.append(bytes.substr(pos, r.length));
        else
            out.append(replacement_character);
        pos += r.length;
    }
    return pos;
}

} // namespace kvscope::utf8
