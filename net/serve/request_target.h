// net/serve: the path a request's target names, as the routes and the
// access log see it.
#pragma once

#include <string>
#include <string_view>

namespace kvscope::serve {

// The target's path (before any '?'), its %XX escapes decoded (a '%' not
// followed by two hex digits stays as it is). The result may hold any
// byte, NUL and CR LF included: escape it before logging (access_log.h).
std::string decoded_path(std::string_view target);

} // namespace kvscope::serve
