#include "net/serve/request_target.h"

namespace kvscope::serve {
namespace {

int hex_value(char c) {
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

} // namespace

std::string decoded_path(std::string_view target) {
    const std::string_view path = target.substr(0, target.find('?'));
    std::string out;
    out.reserve(path.size());
    for (std::size_t i = 0; i < path.size(); ++i) {
        const int hi = path[i] == '%' && i + 2 < path.size() ? hex_value(path[i + 1]) : -1;
        const int lo = hi >= 0 ? hex_value(path[i + 2]) : -1;
        if (lo >= 0) {
            out += static_cast<char>(hi * 16 + lo);
            i += 2;
        } else {
            out += path[i];
        }
    }
    return out;
}

} // namespace kvscope::serve
