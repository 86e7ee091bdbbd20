#include "net/serve/request_reader.h"

#include <iterator>

#include <boost/asio/buffer.hpp>

#include "net/serve/request_target.h"

namespace kvscope::serve {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;

// A body is parsed this much at a time, then decoded.
constexpr std::size_t kBodyChunk = 16 * 1024;

std::string_view as_view(beast::string_view s) { return {s.data(), s.size()}; }

ApiError too_large(std::size_t max_body) {
    return ApiError(413, "invalid_request_error",
                    "the request body is larger than the server's limit of " + std::to_string(max_body) + " bytes");
}

// What a parse error answers.
ApiError parse_error(beast::error_code ec, std::size_t max_body) {
    if (ec == http::error::body_limit)
        return too_large(max_body);
    if (ec == http::error::bad_content_length)
        return ApiError::invalid_request("the request's Content-Length is not a length, or two of them differ");
    if (ec == http::error::bad_transfer_encoding)
        return ApiError::invalid_request(
            "the request's Transfer-Encoding is repeated or comes with a Content-Length (RFC 9112)");
    if (ec == http::error::bad_chunk || ec == http::error::bad_chunk_extension)
        return ApiError::invalid_request("the request's chunked body is malformed");
    return ApiError::invalid_request("the HTTP request could not be read: " + ec.message());
}

} // namespace

RequestReader::RequestReader(const ConnectionLimits& limits, std::size_t max_body)
    : limits_(limits), max_body_(max_body) {
    parser_.header_limit(static_cast<std::uint32_t>(limits.max_head_bytes));
    parser_.body_limit(max_body);
}

std::size_t RequestReader::feed(std::string_view bytes) {
    if (step_ == Step::Ready || step_ == Step::Failed)
        return 0;
    if (!parser_.is_header_done()) {
        const std::size_t taken = feed_head(bytes);
        if (step_ != Step::NeedMore || !parser_.is_header_done())
            return taken;
        return taken + feed_body(bytes.substr(taken));
    }
    step_ = Step::NeedMore; // after Continue: the body
    return feed_body(bytes);
}

std::size_t RequestReader::feed_head(std::string_view bytes) {
    beast::error_code ec;
    const std::size_t taken = parser_.put(boost::asio::buffer(bytes.data(), bytes.size()), ec);
    if (ec == http::error::need_more)
        return taken;
    if (ec == http::error::header_limit) {
        // The parser takes the request line as soon as it is whole: without
        // a target, the line alone was past the limit.
        const std::size_t target = parser_.get().target().size();
        if (target == 0 || target > limits_.max_url_bytes)
            fail(ApiError(414, "invalid_request_error",
                          "the request's URL is longer than the server's limit of " +
                              std::to_string(limits_.max_url_bytes) + " bytes"));
        else
            fail(ApiError(431, "invalid_request_error",
                          "the request's headers are larger than the server's limit of " +
                              std::to_string(limits_.max_head_bytes) + " bytes"));
        return taken;
    }
    if (ec) {
        fail(ec);
        return taken;
    }
    on_head();
    return taken;
}

// What a well-formed head may still break of the limits and of RFC 9112
// (Beast's parser checked the rest: Content-Length and Transfer-Encoding
// together or repeated, a length that is not a number, a declared length
// past the body limit).
void RequestReader::on_head() {
    const auto& head = parser_.get();
    if (head.target().size() > limits_.max_url_bytes)
        return fail(ApiError(414, "invalid_request_error",
                             "the request's URL is longer than the server's limit of " +
                                 std::to_string(limits_.max_url_bytes) + " bytes"));
    if (static_cast<std::size_t>(std::distance(head.begin(), head.end())) > limits_.max_header_fields)
        return fail(ApiError(431, "invalid_request_error",
                             "the request has more header fields than the server's limit of " +
                                 std::to_string(limits_.max_header_fields)));
    const auto te = head.find(http::field::transfer_encoding);
    if (te != head.end() && !beast::iequals(te->value(), "chunked"))
        return fail(
            ApiError::invalid_request("the request's Transfer-Encoding is not chunked, the only one the server reads"));
    decoder_ = BodyDecoder::for_encoding(as_view(head[http::field::content_encoding]), max_body_);
    if (!decoder_)
        return fail(ApiError(415, "invalid_request_error",
                             "the request's Content-Encoding is not one the server decodes (gzip, deflate)"));
    if (parser_.is_done()) {
        step_ = Step::Ready;
        return;
    }
    const auto declared = parser_.content_length();
    decoder_->expect(declared ? std::optional<std::uint64_t>(*declared) : std::nullopt);
    chunk_.resize(kBodyChunk);
    if (beast::iequals(head[http::field::expect], "100-continue") && !continue_said_) {
        continue_said_ = true;
        step_ = Step::Continue;
    }
}

// The bytes parsed go through the decoder at once: nothing past the limit
// is ever held, encoded or not.
std::size_t RequestReader::feed_body(std::string_view bytes) {
    std::size_t taken = 0;
    while (!parser_.is_done()) {
        auto& body = parser_.get().body();
        body.data = chunk_.data();
        body.size = chunk_.size();
        beast::error_code ec;
        const std::size_t n =
            parser_.put(boost::asio::buffer(bytes.data() + taken, bytes.size() - taken), ec);
        taken += n;
        const std::size_t got = chunk_.size() - body.size;
        if (ec == http::error::need_buffer || ec == http::error::need_more)
            ec = {};
        if (ec) {
            fail(ec);
            return taken;
        }
        const BodyDecoder::Result result = decoder_->put(std::string_view(chunk_.data(), got));
        if (result == BodyDecoder::Result::TooLarge) {
            fail(too_large(max_body_));
            return taken;
        }
        if (result == BodyDecoder::Result::Corrupt) {
            fail(ApiError::invalid_request("the request body does not decode as its Content-Encoding says"));
            return taken;
        }
        if (n == 0 && got == 0)
            return taken; // needs more bytes
    }
    if (decoder_->finish() != BodyDecoder::Result::Ok) {
        fail(ApiError::invalid_request("the request body does not decode as its Content-Encoding says"));
        return taken;
    }
    step_ = Step::Ready;
    return taken;
}

void RequestReader::fail(ApiError error) {
    error_ = std::move(error);
    step_ = Step::Failed;
}

void RequestReader::fail(beast::error_code ec) { fail(parse_error(ec, max_body_)); }

HttpRequest RequestReader::take(std::string remote_addr) {
    const auto& head = parser_.get();
    return HttpRequest{std::string(as_view(head.method_string())),
                       decoded_path(as_view(head.target())),
                       std::string(as_view(head[http::field::authorization])),
                       decoder_ ? decoder_->take() : std::string(),
                       std::move(remote_addr),
                       std::chrono::steady_clock::now()};
}

bool RequestReader::keep_alive() const { return parser_.get().keep_alive(); }
bool RequestReader::http10() const { return parser_.get().version() < 11; }

std::string RequestReader::method() const {
    return parser_.is_header_done() ? std::string(as_view(parser_.get().method_string())) : "-";
}

std::string RequestReader::path() const {
    return parser_.is_header_done() ? decoded_path(as_view(parser_.get().target())) : "-";
}

} // namespace kvscope::serve
