#include "net/serve/http_connection.h"

#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>
#include <fmt/format.h>

#include "net/serve/allocator_policy.h"


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
// A request's bytes are read this much at a time.
constexpr std::size_t kRequestRead = 16 * 1024;
// What the client still sends after an error reply is read (and dropped)
// this much at a time.
constexpr std::size_t kLingerRead = 16 * 1024;
// Queued pieces written with one call, at most.
constexpr std::size_t kMaxGathered = 64;

constexpr const char* kJson = "application/json";

void release(std::string& body) {
    const bool large = body.capacity() >= kTrimAfterBytes;
    std::string().swap(body);
    if (large)
        give_back_free_memory();
}

double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

std::string_view as_view(beast::string_view s) { return {s.data(), s.size()}; }

std::string_view reason(int status) {
    const beast::string_view r = http::obsolete_reason(http::int_to_status(static_cast<unsigned>(status)));
    return as_view(r);
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
    reader_.emplace(context_.limits, context_.max_body_bytes);
    stream_.expires_after(context_.limits.request_timeout); // the head and the body together
    read_on();
}

// The reader takes what the buffer holds; then more is read, the request
// goes to its route, or its error goes back.
void HttpConnection::read_on() {
    const std::size_t taken = reader_->feed(
        std::string_view(static_cast<const char*>(buffer_.data().data()), buffer_.size()));
    buffer_.consume(taken);
    switch (reader_->step()) {
    case RequestReader::Step::Ready: return dispatch();
    case RequestReader::Step::Failed: return reject(reader_->error());
    case RequestReader::Step::Continue: {
        auto cont = std::make_shared<std::string>("HTTP/1.1 100 Continue\r\n\r\n");
        return asio::async_write(stream_, asio::buffer(*cont),
                                 [self = shared_from_this(), cont](beast::error_code ec, std::size_t) {
                                     ec ? self->close() : self->read_on();
                                 });
    }
    case RequestReader::Step::NeedMore: break;
    }
    stream_.async_read_some(buffer_.prepare(kRequestRead),
                            [self = shared_from_this()](beast::error_code ec, std::size_t n) {
                                if (ec) // gone, or past the request timeout: nothing to answer
                                    return self->close();
                                self->buffer_.commit(n);
                                self->read_on();
                            });
}

// The request goes to its route on a worker thread; the connection keeps
// reading meanwhile (watch_client).
void HttpConnection::dispatch() {
    request_ = reader_->take(remote_addr_);
    client_keep_alive_ = reader_->keep_alive();
    http10_ = reader_->http10();
    reader_.reset();
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
// `error` is a copy: it may be the reader's, which goes here.
void HttpConnection::reject(ApiError error) {
    client_keep_alive_ = false;
    const std::string body = error_body(error);
    request_ = HttpRequest{"-", "-", {}, {}, remote_addr_, Clock::now()};
    if (reader_) {
        request_.method = reader_->method();
        request_.path = reader_->path();
    }
    figures_ = {};
    status_ = error.status();
    logged_ = false;
    log_exchange();
    if (reader_) {
        std::string read = reader_->take(remote_addr_).body;
        reader_.reset();
        release(read);
    }
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
    linger_.resize(kLingerRead);
    stream_.async_read_some(asio::buffer(linger_), [self = shared_from_this()](beast::error_code ec, std::size_t) {
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
