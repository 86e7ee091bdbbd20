// net/serve: an error a client of the OpenAI-compatible server gets back,
// with its HTTP status, in the shape OpenAI's API (and vLLM's server) uses:
//   {"error": {"message": "...", "type": "...", "param": "..." | null, "code": 400}}
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "engine/core/error.h"

namespace kvscope::serve {

class ApiError : public Error {
public:
    // `status`: the HTTP status (400, 401, 404, 413, 503, ...). `type`:
    // OpenAI's word for it ("invalid_request_error", "authentication_error",
    // "not_found_error", ...). `param`: the request field at fault, if one is.
    ApiError(int status, std::string type, const std::string& message, std::optional<std::string> param = {});

    int status() const { return status_; }
    const std::string& type() const { return type_; }
    const std::optional<std::string>& param() const { return param_; }

    // The body the server sends.
    nlohmann::ordered_json to_json() const;

    // The common ones.
    static ApiError invalid_request(const std::string& message, std::optional<std::string> param = {}); // 400
    static ApiError unauthorized(const std::string& message); // 401
    static ApiError not_found(const std::string& message, std::optional<std::string> param = {}); // 404
    static ApiError too_large(const std::string& message); // 413
    static ApiError overloaded(const std::string& message); // 503

private:
    int status_;
    std::string type_;
    std::optional<std::string> param_;
};

} // namespace kvscope::serve
