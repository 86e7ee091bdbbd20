// tests/net/hub: which HubError a call throws, for the hub tests.
#pragma once

#include <functional>
#include <stdexcept>
#include <string>

#include "net/hub/hub_error.h"

namespace kvscope::test {

// The kind of the HubError `f` throws (its message into `message`); throws
// std::runtime_error when `f` throws none.
inline hub::HubErrorKind kind_of(const std::function<void()>& f, std::string* message = nullptr) {
    try {
        f();
    } catch (const hub::HubError& e) {
        if (message)
            *message = e.what();
        return e.kind();
    }
    throw std::runtime_error("no HubError was thrown");
}

} // namespace kvscope::test
