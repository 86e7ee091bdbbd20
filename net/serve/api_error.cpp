#include "net/serve/api_error.h"

#include <nlohmann/json.hpp>

namespace kvscope::serve {

ApiError::ApiError(int status, std::string type, const std::string& message, std::optional<std::string> param)
    : Error(message), status_(status), type_(std::move(type)), param_(std::move(param)) {}

nlohmann::ordered_json ApiError::to_json() const {
    nlohmann::ordered_json error = {{"message", what()}, {"type", type_}, {"param", nullptr}, {"code", status_}};
    if (param_)
        error["param"] = *param_;
    return {{"error", error}};
}

ApiError ApiError::invalid_request(const std::string& message, std::optional<std::string> param) {
    return {400, "invalid_request_error", message, std::move(param)};
}
ApiError ApiError::unauthorized(const std::string& message) { return {401, "authentication_error", message}; }
ApiError ApiError::not_found(const std::string& message, std::optional<std::string> param) {
    return {404, "not_found_error", message, std::move(param)};
}
ApiError ApiError::too_large(const std::string& message) { return {413, "invalid_request_error", message}; }
ApiError ApiError::overloaded(const std::string& message) { return {503, "service_unavailable", message}; }

} // namespace kvscope::serve
