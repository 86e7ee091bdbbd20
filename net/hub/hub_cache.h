// net/hub: the Hugging Face hub cache on disk, the layout llama.cpp's -hf
// (common/hf-cache.cpp) and huggingface_hub both use
// (https://huggingface.co/docs/huggingface_hub/guides/manage-cache):
//
//   CACHE/models--ORG--NAME/refs/main                 the commit "main" names (40 hex)
//   CACHE/models--ORG--NAME/blobs/OID                 each file's bytes, named by its hash
//   CACHE/models--ORG--NAME/snapshots/COMMIT/PATH     a relative symlink to ../../blobs/OID
//
// A download in progress is BLOB.downloadInProgress (llama.cpp's name for
// it, so either tool resumes the other's), written under huggingface_hub's
// lock for that blob (lock_path); a blob appears under its final name only
// once its hash is checked, by an atomic rename.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "net/hub/gguf_choice.h"

namespace kvscope::hub {

class HubCache {
public:
    explicit HubCache(std::filesystem::path root) : root_(std::move(root)) {}

    const std::filesystem::path& root() const { return root_; }
    // "ORG/NAME" → ROOT/models--ORG--NAME.
    std::filesystem::path repo_dir(const std::string& repo) const;
    std::filesystem::path blob_path(const std::string& repo, const std::string& oid) const;
    std::filesystem::path snapshot_path(const std::string& repo, const std::string& commit,
                                        const std::string& file) const;
    static std::filesystem::path in_progress_path(const std::filesystem::path& blob);
    // huggingface_hub's lock for downloading a blob: ROOT/.locks/models--ORG--NAME/OID.lock
    // (file_download.py; py-filelock takes it with flock on Unix).
    std::filesystem::path lock_path(const std::string& repo, const std::string& oid) const;

    // refs/main, else the first ref with a commit; nullopt when none.
    std::optional<std::string> cached_commit(const std::string& repo) const;
    // Writes refs/NAME atomically.
    void write_ref(const std::string& repo, const std::string& name, const std::string& commit) const;
    // The files of the cached commit's snapshot (sizes of what the links
    // point at; no oids). Empty when the repository is not cached.
    std::vector<RepoFile> cached_files(const std::string& repo) const;
    // Makes snapshots/COMMIT/FILE a relative symlink to `blob` (moving the
    // blob there where symlinks cannot be made); returns the snapshot path.
    std::filesystem::path link_snapshot(const std::string& repo, const std::string& commit, const std::string& file,
                                        const std::filesystem::path& blob) const;

    // Every repository in the cache with a snapshot: "ORG/NAME".
    std::vector<std::string> cached_repos() const;

private:
    std::filesystem::path root_;
};

} // namespace kvscope::hub
