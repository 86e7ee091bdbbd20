#include "net/hub/cached_models.h"

#include "engine/core/error.h"
#include "engine/model/gguf_file.h"
#include "engine/model/model_config.h"
#include "net/hub/hub_cache.h"

namespace kvscope::hub {
namespace {

// Fills the GGUF-derived fields of `m` from its first file.
void describe(CachedGguf& m) {
    try {
        const GgufFile file(m.path.string());
        m.architecture = file.get_string("general.architecture").value_or("");
        if (m.parts > 1) {
            m.why_not = "split in " + std::to_string(m.parts) + " files; kvscope reads one-file GGUFs";
            return;
        }
        read_model_config(file); // checks the architecture, every tensor and its type
        m.runnable = true;
    } catch (const Error& e) {
        m.why_not = e.what();
    }
}

} // namespace

std::vector<CachedGguf> list_cached_models(const std::filesystem::path& cache_dir) {
    const HubCache cache(cache_dir);
    std::vector<CachedGguf> models;
    for (const std::string& repo : cache.cached_repos()) {
        const std::string commit = *cache.cached_commit(repo);
        const std::vector<RepoFile> files = cache.cached_files(repo);
        for (const RepoFile& f : files) {
            const auto name = parse_gguf_name(f.path);
            if (!name || name->part != 1 || !is_model_gguf(f.path))
                continue;
            CachedGguf m{repo, name->quant, cache.snapshot_path(repo, commit, f.path), name->parts, 0, {}, false, {}};
            for (const RepoFile& part : files)
                if (const auto n = parse_gguf_name(part.path); n && n->stem == name->stem && n->parts == name->parts)
                    m.bytes += part.size;
            describe(m);
            models.push_back(std::move(m));
        }
    }
    return models;
}

} // namespace kvscope::hub
