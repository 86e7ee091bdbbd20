// net/serve: the server's access log, one line per request ("http" logger,
// stderr), as text or as JSON objects (--log-format json, for log
// collectors). Whatever a client chose (its path, header values, a model
// name) is escaped before it reaches a line: control characters, backslash
// and bytes that are not UTF-8 are written \xHH, so no request can forge a
// line, end one early or write a NUL.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace spdlog {
class logger;
}

namespace kvscope::serve {

enum class LogFormat { Text, Json };

// Parses "text" or "json"; throws kvscope::Error naming the value otherwise.
LogFormat parse_log_format(std::string_view word);

// `text` with every control character (C0, DEL, C1), backslash and byte
// outside well-formed UTF-8 as \xHH; printable UTF-8 stays as it is.
std::string escape_for_log(std::string_view text);

// What one access-log line says; unknown figures are empty ("-" in text,
// null in JSON). `status` 499: the client left before its reply.
struct AccessEntry {
    std::string remote_addr;
    std::string method;
    std::string path; // decoded, as routed; escaped when written
    int status = 0;
    std::optional<std::size_t> tokens_in, tokens_out;
    std::optional<double> ttft_ms, total_ms;
};

class AccessLog {
public:
    explicit AccessLog(LogFormat format);
    // In JSON, the "http" logger's every line is one object: its time (UTC)
    // and level first, then the entry's fields or "message".
    void write(const AccessEntry& entry) const;
    // A server error on the same logger (escaped, JSON in JSON format).
    void error(std::string_view message) const;
    // The fields write() logs after spdlog's prefix (in JSON: the object's
    // members after "time" and "level", and its closing brace).
    std::string format(const AccessEntry& entry) const;

private:
    LogFormat format_;
    std::shared_ptr<spdlog::logger> log_;
};

} // namespace kvscope::serve
