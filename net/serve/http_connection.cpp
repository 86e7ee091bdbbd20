#include "net/serve/http_connection.h"

#include <malloc.h>

#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/http/read.hpp>
#include <fmt/format.h>

#include "net/serve/request_target.h"

namespace kvscope::serve {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using Clock = std::chrono::steady_clock;

// Bytes read at a time while a connection waits for a request, and while
// its route runs (a pipelined next request is kept up to kMaxPipelined).
constexpr std::size_t kFirstRead = 512;
constexpr std::size_t kWatchRead = 4096;
constexpr std::size_t kMaxPipelined = 64 * 1024;
// A body is read this much at a time, then decoded.
constexpr std::size_t kBodyChunk = 16 * 1024;
// Queued pieces written with one call, at most.
constexpr std::size_t kMaxGathered = 64;

constexpr const char* kJson = "application/json";
// A body this large, once dropped, has the allocator give its free memory
// back (glibc serves a size it has freed once from its heap afterwards,
// and keeps it): a burst of large requests leaves no lasting growth.
constexpr std::size_t kTrimAfter = 1 << 20;

void release(std::string& body) {
    const bool large = body.capacity() >= kTrimAfter;
    std::string().swap(body);
    if (large)
        malloc_trim(0);
}

double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

// The error a parse failure answers; nullopt: the client went away or timed
// out, nothing to answer.
std::optional<ApiError> parse_error(beast::error_code ec, std::size_t max_body) {
    // A socket error or the request timeout (not the HTTP category), or a
    // client that left mid-request.
    if (ec.category() != beast::error_code(http::error::body_limit).category() || ec == http::error::end_of_stream ||
        ec == http::error::partial_message)
        return std::nullopt;
    if (ec == http::error::body_limit)
        return ApiError(413, "invalid_request_error",
                        "the request body is larger than the server's limit of " + std::to_string(max_body) + " bytes");
    if (ec == http::error::bad_content_length)
        return ApiError::invalid_request("the request's Content-Length is not a length, or two of them differ");
    if (ec == http::error::bad_transfer_encoding)
        return ApiError::invalid_request(
            "the request's Transfer-Encoding is repeated or comes with a Content-Length (RFC 9112)");
    if (ec == http::error::bad_chunk || ec == http::error::bad_chunk_extension)
        return ApiError::invalid_request("the request's chunked body is malformed");
    return ApiError::invalid_request("the HTTP request could not be read: " + ec.message());
}

std::string_view as_view(beast::string_view s) { return {s.data(), s.size()}; }

std::string_view reason(int status) {
    const beast::string_view r = http::obsolete_reason(http::int_to_status(static_cast<unsigned>(status)));
    return as_view(r);
}

// What a well-formed head may still break of the server's limits and of
// RFC 9112 (Beast's parser checked the rest: Content-Length and
// Transfer-Encoding together or repeated, a length that is not a number).
std::optional<ApiError> check_head(const http::request_parser<http::buffer_body>::value_type& head,
                                   const ConnectionLimits& limits) {
    if (head.target().size() > limits.max_url_bytes)
        return ApiError(414, "invalid_request_error",
                        "the request's URL is longer than the server's limit of " +
                            std::to_string(limits.max_url_bytes) + " bytes");
    if (static_cast<std::size_t>(std::distance(head.begin(), head.end())) > limits.max_header_fields)
        return ApiError(431, "invalid_request_error",
                        "the request has more header fields than the server's limit of " +
                            std::to_string(limits.max_header_fields));
    const auto te = head.find(http::field::transfer_encoding);
    if (te != head.end() && !beast::iequals(te->value(), "chunked"))
        return ApiError::invalid_request("the request's Transfer-Encoding is not chunked, the only one the server reads");
    return std::nullopt;
}

std::string chunk_of(std::string_view piece) { return fmt::format("{:x}\r\n{}\r\n", piece.size(), piece); }

} // namespace

HttpConnection::HttpConnection(asio::ip::tcp::socket socket, const ConnectionContext& context)
    : stream_(std::move(socket)), context_(context), out_(context.limits.max_unsent_bytes) {
    beast::error_code ec;
    const auto peer = stream_.socket().remote_endpoint(ec);
    remote_addr_ = ec ? "-" : peer.address().to_string();
    stream_.socket().set_option(asio::ip::tcp::no_delay(true), ec); // a token goes out as it comes
}

HttpConnection::~HttpConnection() { context_.registry.remove(this); }

void HttpConnection::start() {
    const std::size_t from_client = context_.registry.add(shared_from_this(), remote_addr_);
    const std::size_t cap = context_.limits.max_per_client;
    asio::post(stream_.get_executor(), [self = shared_from_this(), over = cap > 0 && from_client > cap, cap] {
        if (!over)
            return self->wait_request();
        self->phase_ = Phase::Reading; // answered as a request that cannot be read
        self->reject(ApiError::overloaded("too many connections from " + self->remote_addr_ + " (at most " +
                                          std::to_string(cap) + ")"));
    });
}

void HttpConnection::drain() {
    asio::post(stream_.get_executor(), [self = shared_from_this()] {
        if (self->phase_ == Phase::Idle)
            self->close();
    });
}

void HttpConnection::close_now() {
    gone_.store(true);
    asio::post(stream_.get_executor(), [self = shared_from_this()] { self->close(); });
}

// Reading a request.

// An idle connection holds a small buffer and a timer, no thread.
void HttpConnection::wait_request() {
    phase_ = Phase::Idle;
    if (context_.routes.draining() && served_ > 0) // one opened while draining gets its answer
        return close();
    if (buffer_.size() > 0) // pipelined
        return read_head();
    buffer_.shrink_to_fit(); // what a large head needed is not kept while idle
    stream_.expires_after(context_.limits.idle_timeout);
    stream_.async_read_some(buffer_.prepare(kFirstRead),
                            [self = shared_from_this()](beast::error_code ec, std::size_t n) {
                                self->on_first_bytes(ec, n);
                            });
}

void HttpConnection::on_first_bytes(beast::error_code ec, std::size_t n) {
    if (ec)
        return close();
    buffer_.commit(n);
    read_head();
}

void HttpConnection::read_head() {
    phase_ = Phase::Reading;
    parser_.emplace();
    parser_->header_limit(static_cast<std::uint32_t>(context_.limits.max_head_bytes));
    parser_->body_limit(context_.max_body_bytes);
    stream_.expires_after(context_.limits.request_timeout); // the head and the body together
    http::async_read_header(stream_, buffer_, *parser_,
                            [self = shared_from_this()](beast::error_code ec, std::size_t) { self->on_head(ec); });
}

void HttpConnection::on_head(beast::error_code ec) {
    if (ec == http::error::header_limit) {
        // The parser takes the request line as soon as it is whole: without
        // a target, the line alone was past the limit.
        const std::size_t target = parser_->get().target().size();
        if (target == 0 || target > context_.limits.max_url_bytes)
            return reject(ApiError(414, "invalid_request_error",
                                   "the request's URL is longer than the server's limit of " +
                                       std::to_string(context_.limits.max_url_bytes) + " bytes"));
        return reject(ApiError(431, "invalid_request_error",
                               "the request's headers are larger than the server's limit of " +
                                   std::to_string(context_.limits.max_head_bytes) + " bytes"));
    }
    if (ec) {
        if (const auto error = parse_error(ec, context_.max_body_bytes))
            return reject(*error);
        return close();
    }
    const auto& head = parser_->get();
    if (const auto error = check_head(head, context_.limits))
        return reject(*error);
    decoder_ = BodyDecoder::for_encoding(as_view(head[http::field::content_encoding]), context_.max_body_bytes);
    if (!decoder_)
        return reject(ApiError(415, "invalid_request_error",
                               "the request's Content-Encoding is not one the server decodes (gzip, deflate)"));
    if (parser_->is_done())
        return dispatch();
    const auto declared = parser_->content_length();
    decoder_->expect(declared ? std::optional<std::uint64_t>(*declared) : std::nullopt);
    if (beast::iequals(head[http::field::expect], "100-continue")) {
        auto cont = std::make_shared<std::string>("HTTP/1.1 100 Continue\r\n\r\n");
        return asio::async_write(stream_, asio::buffer(*cont),
                                 [self = shared_from_this(), cont](beast::error_code e, std::size_t) {
                                     e ? self->close() : self->read_body();
                                 });
    }
    read_body();
}

void HttpConnection::read_body() {
    chunk_.resize(kBodyChunk);
    auto& body = parser_->get().body();
    body.data = chunk_.data();
    body.size = chunk_.size();
    http::async_read_some(stream_, buffer_, *parser_,
                          [self = shared_from_this()](beast::error_code ec, std::size_t) { self->on_body(ec); });
}

// The bytes read go through the decoder at once: nothing past the limit
// is ever held, encoded or not.
void HttpConnection::on_body(beast::error_code ec) {
    if (ec == http::error::need_buffer)
        ec = {};
    if (ec) {
        if (const auto error = parse_error(ec, context_.max_body_bytes))
            return reject(*error);
        return close();
    }
    const std::size_t got = chunk_.size() - parser_->get().body().size;
    auto result = decoder_->put(std::string_view(chunk_.data(), got));
    if (result == BodyDecoder::Result::Ok && parser_->is_done())
        result = decoder_->finish();
    if (result == BodyDecoder::Result::TooLarge)
        return reject(*parse_error(http::error::body_limit, context_.max_body_bytes));
    if (result == BodyDecoder::Result::Corrupt)
        return reject(ApiError::invalid_request("the request body does not decode as its Content-Encoding says"));
    if (!parser_->is_done())
        return read_body();
    dispatch();
}

// The request goes to its route on a worker thread; the connection keeps
// reading meanwhile (watch_client).
void HttpConnection::dispatch() {
    const auto& head = parser_->get();
    request_ = HttpRequest{std::string(as_view(head.method_string())),
                           decoded_path(as_view(head.target())),
                           std::string(as_view(head[http::field::authorization])),
                           decoder_ ? decoder_->take() : std::string(),
                           remote_addr_,
                           Clock::now()};
    client_keep_alive_ = head.keep_alive();
    http10_ = head.version() < 11;
    parser_.reset();
    decoder_.reset();
    std::string().swap(chunk_);
    figures_ = {};
    status_ = 0;
    logged_ = false;
    out_.begin_reply();
    phase_ = Phase::Handling;
    ++served_;
    route_running_ = true;
    reply_out_ = false;
    ++context_.requests_in_flight;
    watch_client();
    asio::post(context_.workers, [self = shared_from_this()] {
        self->context_.routes.handle(self->request_, *self);
        asio::post(self->stream_.get_executor(), [self] { self->route_done(); });
    });
}

// A read while the route runs: end of stream or a reset is the client
// leaving (gone()); bytes are its next request, kept for later.
void HttpConnection::watch_client() {
    if (buffer_.size() >= kMaxPipelined)
        return;
    watching_ = true;
    stream_.expires_never();
    stream_.async_read_some(buffer_.prepare(kWatchRead),
                            [self = shared_from_this()](beast::error_code ec, std::size_t n) {
                                self->on_watch(ec, n);
                            });
}

void HttpConnection::on_watch(beast::error_code ec, std::size_t n) {
    watching_ = false;
    if (next_after_watch_) {
        next_after_watch_ = false;
        if (!ec)
            buffer_.commit(n);
        return phase_ == Phase::Closed ? void() : wait_request();
    }
    if (ec) {
        gone_.store(true);
        if (phase_ != Phase::Handling)
            close();
        return;
    }
    buffer_.commit(n);
    if (phase_ == Phase::Handling)
        watch_client();
}

// Replying (the route's thread).

bool HttpConnection::keep_alive() const { return client_keep_alive_ && !context_.routes.draining(); }

std::string HttpConnection::head(int status, const std::string& content_type,
                                 std::optional<std::size_t> length) const {
    std::string framing = length ? fmt::format("Content-Length: {}\r\n", *length)
                                 : http10_ ? std::string()
                                           : std::string("Transfer-Encoding: chunked\r\n");
    return fmt::format("HTTP/1.1 {} {}\r\nContent-Type: {}\r\n{}Connection: {}\r\n\r\n", status, reason(status),
                       content_type, framing, keep_alive() ? "keep-alive" : "close");
}

void HttpConnection::send(int status, std::string content_type, std::string body) {
    if (out_.streaming()) // a route failed mid-stream: the stream cannot say so in HTTP
        return close_now();
    status_ = status;
    std::string reply = head(status, content_type, body.size());
    if (request_.method != "HEAD") // HEAD: the length the body would have, no body
        reply += body;
    enqueue(std::move(reply), true);
}

// HTTP/1.0 has no chunked coding: its stream is the bytes themselves, and
// the connection's end is the stream's.
void HttpConnection::begin_stream(std::string content_type) {
    out_.mark_streaming();
    status_ = 200;
    if (http10_)
        client_keep_alive_ = false; // set before the route ran; read by the strand only after end_stream
    enqueue(head(200, content_type, std::nullopt), false);
}

bool HttpConnection::write(std::string piece) {
    if (gone_.load())
        return false;
    if (!out_.push(http10_ ? std::move(piece) : chunk_of(piece), false, true)) {
        close_now(); // fell behind: dropped with its request
        return false;
    }
    post_write();
    return true;
}

void HttpConnection::end_stream() { enqueue(http10_ ? std::string() : std::string("0\r\n\r\n"), true); }

void HttpConnection::abandon() {
    status_ = 499; // nginx's word: the client closed the request
    close_now();
}

std::size_t HttpConnection::unsent_bytes() const { return out_.unsent(); }

void HttpConnection::enqueue(std::string bytes, bool last) {
    out_.push(std::move(bytes), last);
    post_write();
}

void HttpConnection::post_write() {
    asio::post(stream_.get_executor(), [self = shared_from_this()] {
        if (!self->writing_)
            self->write_next();
    });
}

// Writing (the strand).

// Whatever is queued goes out in one gathered write: a stream's head and
// first piece, or pieces that came while the last write was on its way.
void HttpConnection::write_next() {
    if (phase_ == Phase::Closed)
        return;
    const std::vector<std::string_view> pieces = out_.front(kMaxGathered);
    if (pieces.empty()) {
        writing_ = false;
        return;
    }
    writing_ = true;
    std::vector<asio::const_buffer> buffers;
    buffers.reserve(pieces.size());
    for (std::string_view piece : pieces)
        buffers.emplace_back(piece.data(), piece.size());
    asio::async_write(stream_.socket(), buffers,
                      [self = shared_from_this(), n = pieces.size()](beast::error_code ec, std::size_t) {
                          self->on_written(ec, n);
                      });
}

void HttpConnection::on_written(beast::error_code ec, std::size_t pieces) {
    const bool over = out_.pop(pieces);
    if (ec)
        return close();
    if (!over)
        return write_next();
    writing_ = false;
    reply_out_ = true;
    if (!route_running_) // the next request may reuse what the route reads
        exchange_over();
}

// The reply is out: the next request, or the end of the connection.
void HttpConnection::exchange_over() {
    if (phase_ == Phase::Closed) // closed while its last write was completing
        return;
    if (phase_ == Phase::Reading) { // an error reply to an unreadable request
        linger();
        return;
    }
    --context_.requests_in_flight;
    phase_ = Phase::Idle;
    if (!keep_alive() || gone_.load())
        return close();
    if (watching_) { // read the next request once the watch ends
        next_after_watch_ = true;
        beast::error_code ignored;
        stream_.socket().cancel(ignored);
        return;
    }
    wait_request();
}

void HttpConnection::route_done() {
    route_running_ = false;
    log_exchange();
    release(request_.body);
    if (!out_.ended()) // abandoned, fell behind, or gone mid-stream
        close();
    else if (reply_out_)
        exchange_over();
}

void HttpConnection::log_exchange() {
    if (logged_)
        return;
    logged_ = true;
    context_.log.write({request_.remote_addr, request_.method, request_.path, status_ == 0 ? 499 : status_,
                        figures_.tokens_in, figures_.tokens_out, figures_.ttft_ms, ms_since(request_.start)});
}

// A request that could not be read: its error, then the connection ends.
void HttpConnection::reject(const ApiError& error) {
    client_keep_alive_ = false;
    const std::string body = error_body(error);
    request_ = HttpRequest{"-", "-", {}, {}, remote_addr_, Clock::now()};
    if (parser_ && parser_->is_header_done()) {
        request_.method = std::string(as_view(parser_->get().method_string()));
        request_.path = decoded_path(as_view(parser_->get().target()));
    }
    figures_ = {};
    status_ = error.status();
    logged_ = false;
    log_exchange();
    parser_.reset();
    if (decoder_) {
        std::string read = decoder_->take();
        decoder_.reset();
        release(read);
    }
    std::string().swap(chunk_);
    out_.begin_reply();
    stream_.expires_after(context_.limits.linger);
    enqueue(fmt::format("HTTP/1.1 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{}",
                        error.status(), reason(error.status()), kJson, body.size(), body),
            true);
}

// After an error reply: stop sending, drop what the client still sends
// for a while, then close (closing at once with unread bytes would reset
// the connection, and the client might never read the reply).
void HttpConnection::linger() {
    beast::error_code ignored;
    stream_.socket().shutdown(asio::ip::tcp::socket::shutdown_send, ignored);
    chunk_.resize(kBodyChunk);
    stream_.async_read_some(asio::buffer(chunk_), [self = shared_from_this()](beast::error_code ec, std::size_t) {
        ec ? self->close() : self->linger();
    });
}

void HttpConnection::close() {
    if (phase_ == Phase::Closed)
        return;
    if (phase_ == Phase::Handling)
        --context_.requests_in_flight;
    phase_ = Phase::Closed;
    gone_.store(true);
    beast::error_code ignored;
    stream_.socket().shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
    stream_.close();
    context_.registry.remove(this);
}

} // namespace kvscope::serve
