// net/hub: getting a model from the Hugging Face Hub into the hub cache, as
// llama.cpp's -hf does (common/download.cpp, common/hf-cache.cpp):
//
//   GET ENDPOINT/api/models/ORG/NAME/refs                   {"branches":[{"name":"main","targetCommit":SHA}]}
//   GET ENDPOINT/api/models/ORG/NAME/tree/SHA?recursive=true [{"type":"file","path","size","oid","lfs":{"oid","size"}}]
//                                                            (in pages: the Link header's rel="next")
//   GET ENDPOINT/ORG/NAME/resolve/SHA/PATH                   the bytes (through a redirect carrying X-Linked-ETag)
//
// then the blob downloaded beside its final name, resumed with Range,
// checked against its SHA-256 and renamed into blobs/, and the snapshot
// linked to it (hub_cache.h).
#pragma once

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "net/hub/gguf_choice.h"
#include "net/hub/hub_reference.h"
#include "net/hub/hub_settings.h"
#include "net/hub/http_transfer.h"

namespace kvscope::hub {

// A model in the cache: its files in the snapshot, a split model's parts in
// order (engines open the first; the rest sit beside it).
struct CachedModel {
    std::string repo;
    std::string commit;
    std::vector<std::filesystem::path> files;
    const std::filesystem::path& first() const { return files.front(); }
};

// What the progress callback is told about: which file, of how many.
struct FileProgress {
    std::string file; // the path in the repository
    int index = 1;    // from 1
    int count = 1;
    TransferProgress transfer;
};
using PullProgress = std::function<bool(const FileProgress&)>;

class HubClient {
public:
    explicit HubClient(HubSettings settings) : settings_(std::move(settings)) {}

    const HubSettings& settings() const { return settings_; }
    // The commit "main" names. Throws HubError NoSuchRepo, Gated, Network, Http.
    std::string main_commit(const std::string& repo) const;
    // Every file of the repository at `commit`.
    std::vector<RepoFile> list_files(const std::string& repo, const std::string& commit) const;
    // Downloads the model `ref` names (every part), checked, into the cache;
    // files already there are not fetched again. Throws HubError saying
    // which failure it met (hub_error.h).
    CachedModel pull(const HubReference& ref, const PullProgress& progress = {}) const;

private:
    std::filesystem::path fetch_blob(const std::string& repo, const std::string& commit, const RepoFile& file,
                                     const std::function<bool(const TransferProgress&)>& progress) const;
    HubSettings settings_;
};

// The model `ref` names when the cache holds it already (every part, in the
// commit refs/main names), without asking the hub; nullopt otherwise.
std::optional<CachedModel> find_cached_model(const std::filesystem::path& cache_dir, const HubReference& ref);

// The cached model if there is one, else pulled: what --model hf://... and
// -hf do. `progress` as for pull.
CachedModel resolve_model(const HubReference& ref, const HubSettings& settings, const PullProgress& progress = {});

// One line for a terminal: "NAME  12.3 / 45.6 MiB  3.4 MiB/s  0:09 left"
// (the rate is this transfer's, so a resumed download does not look fast).
std::string format_progress(const FileProgress& p);

} // namespace kvscope::hub
