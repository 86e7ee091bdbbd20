#include "net/hub/hub_cache.h"

#include <algorithm>
#include <fstream>
#include <system_error>

#include "engine/core/error.h"
#include "net/hub/hub_reference.h"

namespace kvscope::hub {
namespace fs = std::filesystem;
namespace {

constexpr std::string_view kRepoPrefix = "models--";

bool is_commit(const std::string& text) {
    return text.size() == 40 && text.find_first_not_of("0123456789abcdefABCDEF") == std::string::npos;
}

std::string read_first_line(const fs::path& file) {
    std::ifstream in(file);
    std::string line;
    std::getline(in, line);
    return line;
}

std::string replace_all(std::string text, std::string_view from, std::string_view to) {
    for (std::size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
        text.replace(at, from.size(), to);
    return text;
}

} // namespace

fs::path HubCache::repo_dir(const std::string& repo) const {
    return root_ / (std::string(kRepoPrefix) + replace_all(repo, "/", "--"));
}

fs::path HubCache::blob_path(const std::string& repo, const std::string& oid) const {
    return repo_dir(repo) / "blobs" / oid;
}

fs::path HubCache::snapshot_path(const std::string& repo, const std::string& commit, const std::string& file) const {
    return repo_dir(repo) / "snapshots" / commit / fs::path(file);
}

fs::path HubCache::in_progress_path(const fs::path& blob) { return blob.string() + ".downloadInProgress"; }

fs::path HubCache::lock_path(const std::string& repo, const std::string& oid) const {
    return root_ / ".locks" / repo_dir(repo).filename() / (oid + ".lock");
}

std::optional<std::string> HubCache::cached_commit(const std::string& repo) const {
    const fs::path refs = repo_dir(repo) / "refs";
    if (const std::string main = read_first_line(refs / "main"); is_commit(main))
        return main;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(refs, ec))
        if (const std::string commit = read_first_line(entry.path()); entry.is_regular_file() && is_commit(commit))
            return commit;
    return std::nullopt;
}

void HubCache::write_ref(const std::string& repo, const std::string& name, const std::string& commit) const {
    const fs::path ref = repo_dir(repo) / "refs" / name;
    const fs::path temporary = ref.string() + ".tmp";
    fs::create_directories(ref.parent_path());
    {
        std::ofstream out(temporary, std::ios::trunc);
        out << commit;
        if (!out.flush())
            throw Error("cannot write " + temporary.string());
    }
    fs::rename(temporary, ref);
}

std::vector<RepoFile> HubCache::cached_files(const std::string& repo) const {
    const auto commit = cached_commit(repo);
    if (!commit)
        return {};
    const fs::path snapshot = repo_dir(repo) / "snapshots" / *commit;
    std::vector<RepoFile> files;
    std::error_code ec;
    for (const auto& entry : fs::recursive_directory_iterator(snapshot, ec)) {
        std::error_code size_error;
        const auto size = fs::file_size(entry.path(), size_error); // follows the link; fails on a dangling one
        if (size_error || !fs::is_regular_file(entry.path(), size_error))
            continue;
        files.push_back({entry.path().lexically_relative(snapshot).generic_string(), size, {}, false});
    }
    return files;
}

fs::path HubCache::link_snapshot(const std::string& repo, const std::string& commit, const std::string& file,
                                 const fs::path& blob) const {
    const fs::path link = snapshot_path(repo, commit, file);
    std::error_code ec;
    if (fs::exists(link, ec))
        return link;
    fs::create_directories(link.parent_path());
    fs::create_symlink(fs::relative(blob, link.parent_path()), link, ec);
    if (ec) // a file system without symlinks: the snapshot holds the file itself, as llama.cpp does then
        fs::rename(blob, link);
    return link;
}

std::vector<std::string> HubCache::cached_repos() const {
    std::vector<std::string> repos;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(root_, ec)) {
        const std::string folder = entry.path().filename().string();
        if (!entry.is_directory() || !folder.starts_with(kRepoPrefix))
            continue;
        const std::string repo = replace_all(folder.substr(kRepoPrefix.size()), "--", "/");
        if (is_valid_repo_id(repo) && cached_commit(repo))
            repos.push_back(repo);
    }
    std::sort(repos.begin(), repos.end());
    return repos;
}

} // namespace kvscope::hub
