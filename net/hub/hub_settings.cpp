#include "net/hub/hub_settings.h"

#include <cstdlib>
#include <optional>

#include "engine/core/error.h"

namespace kvscope::hub {
namespace {

std::optional<std::string> env(const char* name) {
    const char* value = std::getenv(name);
    if (!value || !*value)
        return std::nullopt;
    return std::string(value);
}

} // namespace

std::filesystem::path hub_cache_dir_from_environment() {
    namespace fs = std::filesystem;
    // The order of llama.cpp's get_cache_directory (common/hf-cache.cpp).
    const struct {
        const char* variable;
        fs::path below;
    } places[] = {
        {"LLAMA_CACHE", {}},
        {"HF_HUB_CACHE", {}},
        {"HUGGINGFACE_HUB_CACHE", {}},
        {"HF_HOME", "hub"},
        {"XDG_CACHE_HOME", fs::path("huggingface") / "hub"},
        {"HOME", fs::path(".cache") / "huggingface" / "hub"},
    };
    for (const auto& place : places)
        if (const auto value = env(place.variable))
            return place.below.empty() ? fs::path(*value) : fs::path(*value) / place.below;
    throw Error("no folder for downloaded models: set LLAMA_CACHE or HF_HUB_CACHE (HOME is not set either)");
}

HubSettings hub_settings_from_environment() {
    HubSettings s;
    if (const auto endpoint = env("MODEL_ENDPOINT") ? env("MODEL_ENDPOINT") : env("HF_ENDPOINT"))
        s.endpoint = endpoint->ends_with('/') ? *endpoint : *endpoint + "/";
    s.token = env("HF_TOKEN").value_or("");
    s.cache_dir = hub_cache_dir_from_environment();
    for (const char* variable : {"KVSCOPE_CA_FILE", "SSL_CERT_FILE", "CURL_CA_BUNDLE"})
        if (const auto file = env(variable)) {
            s.ca_file = *file;
            break;
        }
    return s;
}

} // namespace kvscope::hub
