#include "net/serve/access_log.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <spdlog/logger.h>

#include "engine/core/error.h"
#include "engine/core/log.h"

namespace kvscope::serve {
namespace {

// The length of the well-formed UTF-8 sequence of two or more bytes
// starting at `s[i]` (RFC 3629: no overlongs, no surrogates, at most
// U+10FFFF), or 0 when there is none.
std::size_t utf8_sequence(std::string_view s, std::size_t i) {
    const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
    const unsigned char b = byte(i);
    std::size_t n = 0;
    unsigned char lo = 0x80, hi = 0xBF; // the second byte's range
    if (b >= 0xC2 && b <= 0xDF)
        n = 2;
    else if (b >= 0xE0 && b <= 0xEF) {
        n = 3;
        lo = b == 0xE0 ? 0xA0 : 0x80;
        hi = b == 0xED ? 0x9F : 0xBF;
    } else if (b >= 0xF0 && b <= 0xF4) {
        n = 4;
        lo = b == 0xF0 ? 0x90 : 0x80;
        hi = b == 0xF4 ? 0x8F : 0xBF;
    } else
        return 0;
    if (i + n > s.size() || byte(i + 1) < lo || byte(i + 1) > hi)
        return 0;
    for (std::size_t k = 2; k < n; ++k)
        if (byte(i + k) < 0x80 || byte(i + k) > 0xBF)
            return 0;
    // U+0080..U+009F (C1 controls) are C2 80..C2 9F: escaped too.
    if (n == 2 && b == 0xC2 && byte(i + 1) <= 0x9F)
        return 0;
    return n;
}

std::string count(std::optional<std::size_t> n) { return n ? std::to_string(*n) : std::string("-"); }
std::string ms(std::optional<double> t) { return t ? fmt::format("{:.1f}", *t) : std::string("-"); }

template <typename T> nlohmann::ordered_json or_null(const std::optional<T>& v) {
    return v ? nlohmann::ordered_json(*v) : nlohmann::ordered_json(nullptr);
}

// Milliseconds to 0.1 ms, as the text line writes them.
std::optional<double> tenths(std::optional<double> t) {
    if (!t)
        return std::nullopt;
    return static_cast<double>(static_cast<long long>(*t * 10 + 0.5)) / 10;
}

// The members of `object` after its opening brace.
std::string members(const nlohmann::ordered_json& object) {
    const std::string text = object.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
    return text.substr(1);
}

} // namespace

LogFormat parse_log_format(std::string_view word) {
    if (word == "text")
        return LogFormat::Text;
    if (word == "json")
        return LogFormat::Json;
    throw Error("--log-format must be text or json, got '" + escape_for_log(word) + "'");
}

std::string escape_for_log(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    for (std::size_t i = 0; i < text.size();) {
        const auto b = static_cast<unsigned char>(text[i]);
        if (b >= 0x20 && b < 0x7F && b != '\\') {
            out += static_cast<char>(b);
            ++i;
        } else if (const std::size_t n = b >= 0x80 ? utf8_sequence(text, i) : 0; n > 0) {
            out.append(text.substr(i, n));
            i += n;
        } else {
            out += fmt::format("\\x{:02x}", b);
            ++i;
        }
    }
    return out;
}

AccessLog::AccessLog(LogFormat format) : format_(format), log_(logger("http")) {
    if (format_ == LogFormat::Json)
        log_->set_pattern(R"({"time":"%Y-%m-%dT%H:%M:%S.%eZ","level":"%l",%v)", spdlog::pattern_time_type::utc);
}

std::string AccessLog::format(const AccessEntry& e) const {
    if (format_ == LogFormat::Json) {
        const nlohmann::ordered_json line = {
            {"remote_addr", escape_for_log(e.remote_addr)}, {"method", escape_for_log(e.method)},
            {"path", escape_for_log(e.path)},               {"status", e.status},
            {"tokens_in", or_null(e.tokens_in)},            {"tokens_out", or_null(e.tokens_out)},
            {"ttft_ms", or_null(tenths(e.ttft_ms))},        {"total_ms", or_null(tenths(e.total_ms))}};
        return members(line);
    }
    return fmt::format("{} {} {} {} tokens in {} out {} ttft_ms {} total_ms {}", escape_for_log(e.remote_addr),
                       escape_for_log(e.method), escape_for_log(e.path), e.status, count(e.tokens_in),
                       count(e.tokens_out), ms(e.ttft_ms), ms(e.total_ms));
}

void AccessLog::write(const AccessEntry& entry) const {
    if (log_->should_log(spdlog::level::info))
        log_->info("{}", format(entry));
}

void AccessLog::error(std::string_view message) const {
    if (format_ == LogFormat::Json)
        log_->error("{}", members({{"message", escape_for_log(message)}}));
    else
        log_->error("{}", escape_for_log(message));
}

} // namespace kvscope::serve
