// net/serve: one request and the way back to its client, as the routes
// (server_routes.h) see them: no sockets, no HTTP library. The connection
// (http_connection.h) reads and checks the request, then hands it to a
// route on a worker thread with the connection as its ReplyChannel.
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>

namespace kvscope::serve {

// A request the connection has read whole and found well-formed.
struct HttpRequest {
    std::string method;        // as sent ("GET", "POST", ...)
    std::string path;          // the target's path, percent-decoded
    std::string authorization; // the Authorization header, "" when absent
    std::string body;          // decoded (Content-Encoding), within the body limit
    std::string remote_addr;   // the client's numeric address
    std::chrono::steady_clock::time_point start; // its head was read
};

// The figures a route adds to its request's access-log line.
struct RouteFigures {
    std::optional<std::size_t> tokens_in, tokens_out;
    std::optional<double> ttft_ms;
};

// The way back to one request's client; thread-safe (a route writes from
// its worker thread while the connection's event loop sends). A route
// calls send() once, or begin_stream(), write()s, end_stream().
class ReplyChannel {
public:
    virtual ~ReplyChannel() = default;
    // The whole reply.
    virtual void send(int status, std::string content_type, std::string body) = 0;
    // A 200 reply of unknown length (chunked), its pieces to follow.
    virtual void begin_stream(std::string content_type) = 0;
    // Queues the next piece. False once the client left or fell further
    // behind than the per-connection bound (the connection is then
    // dropped): the route stops and frees what its request holds.
    virtual bool write(std::string piece) = 0;
    virtual void end_stream() = 0;
    // Nothing goes back: the client left first (logged as 499).
    virtual void abandon() = 0;
    // The client closed or reset its connection.
    virtual bool gone() const = 0;
    // Bytes queued and not yet taken by the socket.
    virtual std::size_t unsent_bytes() const = 0;
    // This request's access-log figures, set by its route's thread.
    virtual RouteFigures& figures() = 0;
};

} // namespace kvscope::serve
