#include "net/serve/http_server.h"

#include <atomic>
#include <chrono>
#include <optional>
#include <thread>
#include <vector>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/thread_pool.hpp>

#include "engine/core/error.h"
#include "net/serve/allocator_policy.h"
#include "net/serve/http_connection.h"

namespace kvscope::serve {
namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using namespace std::chrono_literals;

// Event-loop threads: parsing, inflating and writing are short; two keep
// one long inflate from stalling every connection.
constexpr int kIoThreads = 2;
// How long stop() lets replies being written finish before it closes
// every connection: short, since the drain before it had --drain-seconds.
constexpr auto kStopWaitsForReplies = 300ms;
constexpr auto kStopPoll = 5ms;
// After a failed accept (no descriptor left), the next try waits this long.
constexpr auto kAcceptRetry = 50ms;

} // namespace

struct HttpServer::Impl {
    // Declared so that the event loop goes first: the connections its
    // pending handlers still hold reach the registry and the context as
    // they go.
    HttpServerOptions options;
    AccessLog log;
    ServerRoutes routes;
    ConnectionRegistry registry;
    std::atomic<int> requests_in_flight{0};
    asio::thread_pool workers;
    ConnectionContext context;
    asio::io_context io{kIoThreads};
    std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work;
    tcp::acceptor acceptor{io};
    asio::steady_timer accept_retry{io};
    std::vector<std::thread> io_threads;
    bool stopped = false;

    explicit Impl(HttpServerOptions o)
        : options(std::move(o)), log(options.log_format), routes(options.api_key, options.limits, log),
          workers(options.http_threads), context{routes,   log,     options.connection, options.limits.max_body_bytes,
                                                 workers, registry, requests_in_flight} {}

    void listen() {
        tcp::resolver resolver(io);
        boost::system::error_code ec;
        const auto found = resolver.resolve(options.host, std::to_string(options.port),
                                            tcp::resolver::passive | tcp::resolver::numeric_service, ec);
        if (ec || found.empty())
            throw Error("cannot listen on " + options.host + ":" + std::to_string(options.port) +
                        " (not an address of this machine?)");
        const tcp::endpoint at = found.begin()->endpoint();
        acceptor.open(at.protocol(), ec);
        // SO_REUSEADDR only (no SO_REUSEPORT): a port another server holds is an error.
        if (!ec)
            acceptor.set_option(asio::socket_base::reuse_address(true), ec);
        if (!ec)
            acceptor.bind(at, ec);
        if (!ec)
            acceptor.listen(asio::socket_base::max_listen_connections, ec);
        if (ec)
            throw Error("cannot listen on " + options.host + ":" + std::to_string(options.port) +
                        " (address in use, or not an address of this machine?): " + ec.message());
    }

    void accept() {
        acceptor.async_accept(asio::make_strand(io), [this](boost::system::error_code ec, tcp::socket socket) {
            if (ec == asio::error::operation_aborted || !acceptor.is_open())
                return;
            if (ec) // out of descriptors, say: try again a little later, not in a busy loop
                return retry_accept();
            std::make_shared<HttpConnection>(std::move(socket), context)->start();
            accept();
        });
    }

    void retry_accept() {
        accept_retry.expires_after(kAcceptRetry);
        accept_retry.async_wait([this](boost::system::error_code ec) {
            if (!ec)
                accept();
        });
    }

    void run() {
        work.emplace(io.get_executor());
        for (int i = 0; i < kIoThreads; ++i)
            io_threads.emplace_back([this] { io.run(); });
    }

    template <typename Done> void wait_until(Done done, std::chrono::milliseconds timeout) const {
        const auto until = std::chrono::steady_clock::now() + timeout;
        while (!done() && std::chrono::steady_clock::now() < until)
            std::this_thread::sleep_for(kStopPoll);
    }

    void stop() {
        if (stopped)
            return;
        stopped = true;
        wait_until([&] { return requests_in_flight.load() == 0; }, kStopWaitsForReplies);
        asio::post(io, [this] {
            boost::system::error_code ignored;
            acceptor.close(ignored);
            accept_retry.cancel();
        });
        registry.for_each([](const std::shared_ptr<HttpConnection>& c) { c->close_now(); });
        wait_until([&] { return registry.size() == 0; }, kStopWaitsForReplies);
        work.reset();
        io.stop();
        for (std::thread& t : io_threads)
            t.join();
        workers.join(); // the routes see their connections gone and return
    }
};

HttpServer::HttpServer(HttpServerOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}

HttpServer::~HttpServer() { stop(); }

int HttpServer::start() {
    map_large_blocks_apart(); // request bodies' memory goes back once they are freed
    impl_->listen();
    impl_->accept();
    impl_->run();
    return impl_->acceptor.local_endpoint().port();
}

void HttpServer::serve(const ServingBackend& backend) { impl_->routes.serve(backend); }

void HttpServer::begin_drain() {
    impl_->routes.begin_drain();
    impl_->registry.for_each([](const std::shared_ptr<HttpConnection>& c) { c->drain(); });
}

void HttpServer::stop() { impl_->stop(); }

} // namespace kvscope::serve
