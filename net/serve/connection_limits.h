// net/serve: what one client connection may cost the server: the size of a
// request's head, and how long the server waits for a request and for the
// client to read its reply. The body limit is RequestLimits' (openai_request.h).
#pragma once

#include <chrono>
#include <cstddef>

namespace kvscope::serve {

struct ConnectionLimits {
    // The request target (path and query): longer answers 414.
    std::size_t max_url_bytes = 8 * 1024;
    // The request line and headers together: more answers 431 (414 when
    // the request line alone is past max_url_bytes).
    std::size_t max_head_bytes = 32 * 1024;
    // Header fields: more answers 431.
    std::size_t max_header_fields = 100;
    // A keep-alive connection waits this long for its next request's first
    // byte, then is closed.
    std::chrono::milliseconds idle_timeout{60'000};
    // From a request's first byte, its head and body must arrive within
    // this (a client sending a header line a second is cut off): a timer,
    // no thread waits.
    std::chrono::milliseconds request_timeout{30'000};
    // A streamed reply's pieces the client has not read yet: past this the
    // request is aborted (its KV freed) and the connection dropped.
    std::size_t max_unsent_bytes = 1 << 20;
    // Open connections one client address may hold (0: no cap); past it a
    // new one is answered 503 and closed.
    std::size_t max_per_client = 0;
    // After an error reply that closes the connection, what the client
    // still sends is read and dropped this long (so it reads the reply
    // rather than a reset).
    std::chrono::milliseconds linger{1000};
};

} // namespace kvscope::serve
