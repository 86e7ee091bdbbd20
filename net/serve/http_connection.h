// net/serve: one client's TCP connection to `kvscope-cli serve`, on
// Boost.Beast over Asio. Its requests are read on the event loop (no
// thread waits for a client) through a RequestReader (limits while
// reading, strict framing; its refusals are answered, then the connection
// closes), within the request timeout. A
// request read whole goes to its route on a worker thread, with the
// connection as its ReplyChannel; meanwhile the connection keeps reading,
// so a client that hangs up is seen at once, and a streamed reply's unsent
// pieces are bounded. Every request gets one access-log line.
//
// Threading: everything but the ReplyChannel methods runs on the
// connection's strand; those are safe from the route's worker thread.
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>

#include "net/serve/access_log.h"
#include "net/serve/connection_limits.h"
#include "net/serve/connection_registry.h"
#include "net/serve/http_exchange.h"
#include "net/serve/reply_queue.h"
#include "net/serve/request_reader.h"
#include "net/serve/server_routes.h"

namespace kvscope::serve {

// What every connection of one server shares; outlives them all.
struct ConnectionContext {
    const ServerRoutes& routes;
    const AccessLog& log;
    ConnectionLimits limits;
    std::size_t max_body_bytes;
    boost::asio::thread_pool& workers;
    ConnectionRegistry& registry;
    std::atomic<int>& requests_in_flight; // handed to a route, reply not written yet
};

class HttpConnection : public ReplyChannel, public std::enable_shared_from_this<HttpConnection> {
public:
    // `socket`'s executor is the connection's strand.
    HttpConnection(boost::asio::ip::tcp::socket socket, const ConnectionContext& context);
    ~HttpConnection() override;

    // Registers the connection and waits for its first request.
    void start();
    // The server drains (ServerRoutes::draining()): closes the connection
    // now if it waits for a request; otherwise its reply says Connection:
    // close. Any thread.
    void drain();
    // Closes the connection now (what is in flight sees gone()). Any thread.
    void close_now();

    // ReplyChannel (the route's thread).
    void send(int status, std::string content_type, std::string body) override;
    void begin_stream(std::string content_type) override;
    bool write(std::string piece) override;
    void end_stream() override;
    void abandon() override;
    bool gone() const override { return gone_.load(); }
    std::size_t unsent_bytes() const override;
    RouteFigures& figures() override { return figures_; }

private:
    enum class Phase { Idle, Reading, Handling, Closed };

    void wait_request();
    void on_first_bytes(boost::beast::error_code ec, std::size_t n);
    void read_head();
    void read_on();
    void dispatch();
    void watch_client();
    void on_watch(boost::beast::error_code ec, std::size_t n);
    void route_done();
    void enqueue(std::string bytes, bool last);
    void post_write();
    void write_next();
    void on_written(boost::beast::error_code ec, std::size_t pieces);
    void exchange_over();
    void reject(ApiError error);
    void linger();
    void close();
    bool keep_alive() const;
    std::string head(int status, const std::string& content_type, std::optional<std::size_t> length) const;
    void log_exchange();

    boost::beast::tcp_stream stream_;
    const ConnectionContext& context_;
    boost::beast::flat_buffer buffer_;
    std::optional<RequestReader> reader_; // the request being read
    std::string linger_;                  // what a rejected client still sends, dropped
    Phase phase_ = Phase::Idle;
    bool watching_ = false;       // a read watches the client while its route runs
    bool next_after_watch_ = false; // the watch was cancelled to read the next request
    bool client_keep_alive_ = true;
    bool http10_ = false; // an HTTP/1.0 request: streams unchunked, then close
    std::size_t served_ = 0; // requests handed to a route
    std::string remote_addr_;

    // The exchange in progress (the request and what its route sent).
    HttpRequest request_;
    RouteFigures figures_;
    int status_ = 0;
    bool logged_ = false;
    std::atomic<bool> gone_{false};
    bool route_running_ = false; // strand: the route has not returned
    bool reply_out_ = false;     // strand: its reply's last byte is written

    ReplyQueue out_;
    bool writing_ = false; // strand only
};

} // namespace kvscope::serve
