#include "net/client/sse_reader.h"

namespace kvscope::client {

bool parse_sse_line(std::string_view line, SseField& field) {
    if (line.empty() || line.front() == ':')
        return false;
    const std::size_t colon = line.find(':');
    if (colon == std::string_view::npos) {
        field = {line, {}};
        return true;
    }
    std::string_view value = line.substr(colon + 1);
    if (!value.empty() && value.front() == ' ')
        value.remove_prefix(1);
    field = {line.substr(0, colon), value};
    return true;
}

void SseReader::feed(std::string_view bytes, const std::function<void(const SseField&)>& on_field) {
    pending_.append(bytes);
    std::size_t start = 0;
    for (std::size_t end; (end = pending_.find('\n', start)) != std::string::npos; start = end + 1) {
        std::string_view line(pending_.data() + start, end - start);
        if (!line.empty() && line.back() == '\r')
            line.remove_suffix(1);
        SseField field;
        if (parse_sse_line(line, field))
            on_field(field);
    }
    pending_.erase(0, start);
}

} // namespace kvscope::client
