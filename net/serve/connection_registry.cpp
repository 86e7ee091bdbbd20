#include "net/serve/connection_registry.h"

#include <vector>

namespace kvscope::serve {

void ConnectionRegistry::add(const std::shared_ptr<HttpConnection>& connection) {
    std::lock_guard lock(mutex_);
    open_.emplace(connection.get(), connection);
}

void ConnectionRegistry::remove(const HttpConnection* connection) {
    std::lock_guard lock(mutex_);
    open_.erase(connection);
}

void ConnectionRegistry::for_each(const std::function<void(const std::shared_ptr<HttpConnection>&)>& f) const {
    std::vector<std::shared_ptr<HttpConnection>> open;
    {
        std::lock_guard lock(mutex_);
        open.reserve(open_.size());
        for (const auto& [key, weak] : open_)
            if (auto c = weak.lock())
                open.push_back(std::move(c));
    }
    for (const auto& c : open)
        f(c);
}

std::size_t ConnectionRegistry::size() const {
    std::lock_guard lock(mutex_);
    return open_.size();
}

} // namespace kvscope::serve
