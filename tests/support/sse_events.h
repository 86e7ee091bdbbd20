// Shared by the server's tests: the events of a server-sent-events body as
// /v1/completions and /v1/chat/completions stream them.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace kvscope::test {

// Each "data: ...\n\n" event's JSON, [DONE] as the string "[DONE]". Throws
// std::runtime_error at text that is not such an event.
inline std::vector<nlohmann::json> events_of(const std::string& sse) {
    std::vector<nlohmann::json> events;
    for (std::size_t at = 0; at < sse.size();) {
        const std::size_t end = sse.find("\n\n", at);
        if (end == std::string::npos || sse.compare(at, 6, "data: ") != 0)
            throw std::runtime_error("not an SSE event at " + std::to_string(at));
        const std::string data = sse.substr(at + 6, end - at - 6);
        events.push_back(data == "[DONE]" ? nlohmann::json("[DONE]") : nlohmann::json::parse(data));
        at = end + 2;
    }
    return events;
}

} // namespace kvscope::test
