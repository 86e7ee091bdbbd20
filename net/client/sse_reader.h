// net/client: the client side of server-sent events, as OpenAI-compatible
// servers stream them (`data: {json}` lines, `data: [DONE]` at the end).
// The network cuts the byte stream anywhere: in the middle of a line, of a
// "\r\n", of a UTF-8 sequence; SseReader keeps the unfinished line until
// the rest arrives. Plain C++, no HTTP.
#pragma once

#include <functional>
#include <string>
#include <string_view>

namespace kvscope::client {

// One line of an event stream, split at its first ':' ("data: x" is field
// "data", value "x": the one space after the colon is dropped, as the SSE
// spec says). A line without a colon is a field with an empty value.
struct SseField {
    std::string_view name;
    std::string_view value;
};

class SseReader {
public:
    // Takes the next bytes of the stream; calls on_field for each line they
    // complete, in order. Blank lines (event boundaries) and comments (lines
    // starting with ':', which llama.cpp's server sends as keep-alive pings)
    // are skipped. The views are valid during the call only.
    //
    // Each data line is handed over by itself, not joined with the next
    // ones of its event: the servers this reads send one data line per
    // event, and a client timing tokens wants each line as it arrives.
    void feed(std::string_view bytes, const std::function<void(const SseField&)>& on_field);

    // Bytes of a line not yet ended by "\n" (a stream that stops here was cut).
    bool has_partial_line() const { return !pending_.empty(); }

private:
    std::string pending_;
};

// A complete line without its line ending: a field, or nothing for a blank
// line or a comment.
bool parse_sse_line(std::string_view line, SseField& field);

} // namespace kvscope::client
