// kvscope-cli models: the GGUFs already downloaded into the hub cache, and
// whether kvscope runs each (net/hub/cached_models.h).
#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

#include "app/cli/commands.h"
#include "net/hub/cached_models.h"
#include "net/hub/hub_settings.h"

namespace kvscope::cli {
namespace {

nlohmann::ordered_json to_json(const hub::CachedGguf& m) {
    return {{"repo", m.repo},       {"quant", m.quant},
            {"path", m.path.string()}, {"parts", m.parts},
            {"bytes", m.bytes},     {"architecture", m.architecture},
            {"runnable", m.runnable}, {"why_not", m.why_not}};
}

void print_table(const std::vector<hub::CachedGguf>& models) {
    std::printf("%-44s %-8s %10s  %-12s %s\n", "model (pull/-hf name)", "quant", "MiB", "architecture",
                "kvscope runs it");
    for (const hub::CachedGguf& m : models) {
        const std::string name = m.repo + (m.quant.empty() ? "" : ":" + m.quant);
        std::printf("%-44s %-8s %10.1f  %-12s %s\n", name.c_str(), m.quant.empty() ? "-" : m.quant.c_str(),
                    static_cast<double>(m.bytes) / (1 << 20), m.architecture.empty() ? "-" : m.architecture.c_str(),
                    m.runnable ? "yes" : ("no: " + m.why_not).c_str());
        std::printf("  %s\n", m.path.string().c_str());
    }
}

} // namespace

int run_models(Args& args) {
    const bool json = args.flag("--json");
    args.finish();
    const auto cache = hub::hub_cache_dir_from_environment();
    const std::vector<hub::CachedGguf> models = hub::list_cached_models(cache);
    if (json) {
        nlohmann::ordered_json j{{"cache", cache.string()}, {"models", nlohmann::json::array()}};
        for (const hub::CachedGguf& m : models)
            j["models"].push_back(to_json(m));
        std::printf("%s\n", j.dump(2).c_str());
        return 0;
    }
    std::printf("%zu model%s in %s\n", models.size(), models.size() == 1 ? "" : "s", cache.string().c_str());
    if (!models.empty())
        print_table(models);
    return 0;
}

} // namespace kvscope::cli
