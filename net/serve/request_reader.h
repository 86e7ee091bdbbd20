// net/serve: one HTTP/1.1 request read from the bytes a connection
// receives, no socket: Beast's strict parser with the connection's limits
// (head 431, URL 414, fields 431, the body limit: 413 for a declared
// Content-Length from the head alone, for chunked bodies as they arrive),
// RFC 9112's framing rules (400: differing Content-Lengths,
// Transfer-Encoding with Content-Length or other than chunked, a malformed
// chunk), the body decoded (body_decoder.h) and cut off at the limit as it
// comes. http_connection feeds it; the fuzzer (tests/fuzz/fuzz_http_request)
// feeds it arbitrary bytes.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include <boost/beast/http/buffer_body.hpp>
#include <boost/beast/http/parser.hpp>

#include "net/serve/api_error.h"
#include "net/serve/body_decoder.h"
#include "net/serve/connection_limits.h"
#include "net/serve/http_exchange.h"

namespace kvscope::serve {

class RequestReader {
public:
    enum class Step {
        NeedMore, // feed more bytes
        Continue, // the head asks "Expect: 100-continue": say so, then feed the body (once)
        Ready,    // take() the request
        Failed,   // error() says what to answer; the connection then closes
    };

    RequestReader(const ConnectionLimits& limits, std::size_t max_body);

    // Takes what it can of `bytes`, which start where the last call's taken
    // bytes ended (what is left must be offered again, with more); returns
    // how many bytes it took. step() then says what next.
    std::size_t feed(std::string_view bytes);
    Step step() const { return step_; }
    // With Failed.
    const ApiError& error() const { return *error_; }

    // With Ready: the request, its body decoded.
    HttpRequest take(std::string remote_addr);
    // With Ready: the client keeps the connection open; it speaks HTTP/1.0.
    bool keep_alive() const;
    bool http10() const;
    // What the head said so far, for the log of a request that failed ("-").
    std::string method() const;
    std::string path() const;

private:
    using Parser = boost::beast::http::request_parser<boost::beast::http::buffer_body>;

    std::size_t feed_head(std::string_view bytes);
    std::size_t feed_body(std::string_view bytes);
    void on_head();
    void fail(ApiError error);
    void fail(boost::beast::error_code ec);

    const ConnectionLimits& limits_;
    std::size_t max_body_;
    Parser parser_;
    std::optional<BodyDecoder> decoder_;
    std::string chunk_; // a body's bytes as parsed, before decoding
    Step step_ = Step::NeedMore;
    bool continue_said_ = false;
    std::optional<ApiError> error_;
};

} // namespace kvscope::serve
