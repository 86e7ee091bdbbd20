// net/hub: the models in the hub cache, each described from its GGUF
// header (engine/model's reader maps the file; no weights are read): what
// `kvscope-cli models` lists, and what the app can offer as models at hand.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace kvscope::hub {

struct CachedGguf {
    std::string repo;                  // "ORG/NAME"
    std::string quant;                 // from the file name ("Q4_K_M"); empty when it names none
    std::filesystem::path path;        // the snapshot's file (a split model's first part)
    int parts = 1;                     // a split model's part count
    std::uint64_t bytes = 0;           // all parts together
    std::string architecture;          // general.architecture; empty when the header cannot be read
    bool runnable = false;             // kvscope runs it: architecture, tensors and their types supported
    std::string why_not;               // when not runnable: the reader's reason
};

// Every model GGUF (sidecars left out) in the snapshot each repository's
// refs/main names, repositories in name order. A folder that is not there
// gives an empty list.
std::vector<CachedGguf> list_cached_models(const std::filesystem::path& cache_dir);

} // namespace kvscope::hub
