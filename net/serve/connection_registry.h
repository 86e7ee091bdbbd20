// net/serve: the server's open connections, so that draining and stopping
// reach them. Thread-safe; holds them weakly (a connection lives as long
// as its pending operations and its route).
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

namespace kvscope::serve {

class HttpConnection;

class ConnectionRegistry {
public:
    // Returns how many open connections `address` holds, this one included.
    std::size_t add(const std::shared_ptr<HttpConnection>& connection, const std::string& address);
    void remove(const HttpConnection* connection);
    // Calls `f` on every open connection (outside the lock).
    void for_each(const std::function<void(const std::shared_ptr<HttpConnection>&)>& f) const;
    std::size_t size() const;

private:
    mutable std::mutex mutex_;
    struct Open {
        std::weak_ptr<HttpConnection> connection;
        std::string address;
    };
    std::unordered_map<const HttpConnection*, Open> open_;
    std::unordered_map<std::string, std::size_t> per_address_;
};

} // namespace kvscope::serve
