// kvscope-cli pull: a model from the Hugging Face Hub into the cache
// llama.cpp's -hf shares (net/hub).
#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

#include "app/cli/commands.h"
#include "engine/core/error.h"
#include "net/hub/hub_client.h"
#include "net/hub/model_path.h"

namespace kvscope::cli {

int run_pull(Args& args) {
    const auto text = args.subcommand();
    const bool json = args.flag("--json");
    args.finish();
    if (!text)
        throw Error("pull needs a model: kvscope-cli pull ORG/NAME[:QUANT], e.g. ggml-org/Qwen3-0.6B-GGUF:Q8_0");
    const hub::HubReference ref =
        hub::parse_hub_reference(text->starts_with(hub::kHubScheme) ? text->substr(hub::kHubScheme.size()) : *text);
    const hub::HubSettings settings = hub::hub_settings_from_environment();
    std::fprintf(stderr, "pulling %s from %s into %s\n", ref.text().c_str(), settings.endpoint.c_str(),
                 settings.cache_dir.string().c_str());
    const hub::CachedModel model = hub::HubClient(settings).pull(ref, hub::terminal_progress(stderr));
    if (json) {
        nlohmann::ordered_json j{{"repo", model.repo}, {"commit", model.commit}, {"files", nlohmann::json::array()}};
        for (const auto& f : model.files)
            j["files"].push_back(f.string());
        std::printf("%s\n", j.dump(2).c_str());
    } else {
        for (const auto& f : model.files)
            std::printf("%s\n", f.string().c_str());
    }
    return 0;
}

} // namespace kvscope::cli
