#include "net/serve/connection_registry.h"

#include <vector>

namespace kvscope::serve {

std::size_t ConnectionRegistry::add(const std::shared_ptr<HttpConnection>& connection, const std::string& address) {
    std::lock_guard lock(mutex_);
    open_.emplace(connection.get(), Open{connection, address});
    return ++per_address_[address];
}

void ConnectionRegistry::remove(const HttpConnection* connection) {
    std::lock_guard lock(mutex_);
    const auto it = open_.find(connection);
    if (it == open_.end())
        return;
    if (const auto count = per_address_.find(it->second.address); --count->second == 0)
        per_address_.erase(count);
    open_.erase(it);
}

void ConnectionRegistry::for_each(const std::function<void(const std::shared_ptr<HttpConnection>&)>& f) const {
    std::vector<std::shared_ptr<HttpConnection>> open;
    {
        std::lock_guard lock(mutex_);
        open.reserve(open_.size());
        for (const auto& [key, entry] : open_)
            if (auto c = entry.connection.lock())
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
