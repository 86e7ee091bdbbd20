// Numbers and names in error messages, written the way people read them.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

namespace kvscope {

// 9812224 -> "9,812,224"
inline std::string grouped(std::uint64_t value) {
    std::string digits = std::to_string(value);
    for (auto i = static_cast<std::ptrdiff_t>(digits.size()) - 3; i > 0; i -= 3)
        digits.insert(static_cast<std::size_t>(i), 1, ',');
    return digits;
}

// 1e-05, 10000, 0.5: six significant digits, no trailing zeros.
inline std::string decimal(double value) {
    char text[32];
    std::snprintf(text, sizeof text, "%.6g", value);
    return text;
}

// A name read from a file, quoted and safe to print: a corrupt file can hold
// control bytes or megabytes in a key, so those become '?' and long names
// are cut.
inline std::string quoted(std::string_view name) {
    constexpr std::size_t kMaxShown = 80;
    std::string out = "'";
    for (std::size_t i = 0; i < name.size() && i < kMaxShown; ++i) {
        const auto c = static_cast<unsigned char>(name[i]);
        out += (c < 0x20 || c == 0x7F) ? '?' : static_cast<char>(c);
    }
    out += name.size() > kMaxShown ? "...'" : "'";
    return out;
}

} // namespace kvscope
