// engine/core: what every engine module shares: the error type, named
// loggers and run-time device detection. Depends on spdlog and kernels/ only.
#pragma once

#include <stdexcept>
#include <string>

namespace kvscope {

// Every error the engine raises on bad input or an impossible request. The
// message is meant for a person: it names the thing, what was expected and
// what was found. Front ends print it; nothing aborts on user input.
class Error : public std::runtime_error {
public:
    explicit Error(const std::string& message) : std::runtime_error(message) {}
};

} // namespace kvscope
