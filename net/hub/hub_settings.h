// net/hub: where the hub is, who asks, and where its files go, read from
// the environment as llama.cpp's -hf (common/common.cpp, common/hf-cache.cpp)
// and huggingface_hub read them, so the three tools share one cache.
#pragma once

#include <filesystem>
#include <string>

namespace kvscope::hub {

struct HubSettings {
    std::string endpoint = "https://huggingface.co/"; // always ends in '/'
    std::string token;                                 // sent as "Authorization: Bearer TOKEN" when not empty
    std::filesystem::path cache_dir;                   // the hub cache: models--ORG--NAME/{blobs,snapshots,refs}
    std::string ca_file; // PEM certificates to trust instead of the system's; empty: the system's
    int attempts = 3;    // tries of one download before giving up (each resumes where the last stopped)
};

// The first variable set of: the endpoint MODEL_ENDPOINT, HF_ENDPOINT;
// the token HF_TOKEN; the cache LLAMA_CACHE, HF_HUB_CACHE,
// HUGGINGFACE_HUB_CACHE, $HF_HOME/hub, $XDG_CACHE_HOME/huggingface/hub,
// $HOME/.cache/huggingface/hub; the certificates KVSCOPE_CA_FILE,
// SSL_CERT_FILE, CURL_CA_BUNDLE. Throws kvscope::Error when no cache folder
// can be found (no HOME).
HubSettings hub_settings_from_environment();

// Just the cache folder of the rule above.
std::filesystem::path hub_cache_dir_from_environment();

} // namespace kvscope::hub
