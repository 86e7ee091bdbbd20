#include "net/hub/hub_client.h"

#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "net/hub/file_hash.h"
#include "net/hub/hub_cache.h"
#include "net/hub/hub_error.h"

namespace kvscope::hub {
namespace fs = std::filesystem;
namespace {

// Before the second try of a download none (the connection just dropped);
// later ones wait a little longer each, as a link that keeps failing may
// need a moment.
constexpr std::chrono::milliseconds kRetryStep{500};

bool is_hex(const std::string& text, std::size_t length) {
    return text.size() == length && text.find_first_not_of("0123456789abcdef") == std::string::npos;
}

// A path from the tree listing that stays inside the snapshot folder.
bool is_safe_relative(const std::string& path) {
    const fs::path p(path);
    if (path.empty() || p.is_absolute())
        return false;
    for (const auto& part : p)
        if (part == "..")
            return false;
    return true;
}

std::string escape_path(const std::string& path) {
    static constexpr char kHex[] = "0123456789ABCDEF";
    std::string out;
    for (unsigned char c : path) {
        if (std::isalnum(c) || c == '/' || c == '-' || c == '_' || c == '.' || c == '~') {
            out += static_cast<char>(c);
        } else {
            out += '%';
            out += kHex[c >> 4];
            out += kHex[c & 15];
        }
    }
    return out;
}

// The hub's JSON error ({"error": "..."}), else the body's start.
std::string error_text(const HttpReply& reply) {
    try {
        const auto json = nlohmann::json::parse(reply.body);
        if (json.is_object() && json.contains("error") && json["error"].is_string())
            return json["error"].get<std::string>();
    } catch (const nlohmann::json::exception&) {
    }
    return reply.body.substr(0, 200);
}

// A refusal as the error it means. The hub says which in X-Error-Code
// (huggingface_hub's hf_raise_for_status reads it too): RepoNotFound comes
// with 401 for a repository that does not exist (or is private) to an
// anonymous caller, GatedRepo with 401 or 403 for one whose terms the
// caller has not accepted.
[[noreturn]] void throw_refusal(const HttpReply& reply, const std::string& repo, const HubSettings& settings,
                                const std::string& what) {
    const std::string code = reply.header("x-error-code");
    const std::string page = settings.endpoint + repo;
    if (code == "RepoNotFound" || (code.empty() && reply.status == 404))
        throw HubError(HubErrorKind::NoSuchRepo,
                       "no repository " + repo + " on " + settings.endpoint + " (" + what + ": " +
                           std::to_string(reply.status) + ")" +
                           (settings.token.empty() ? "; check the name, or set HF_TOKEN if it is private" : ""));
    if (code == "GatedRepo" || reply.status == 401 || reply.status == 403)
        throw HubError(HubErrorKind::Gated,
                       settings.token.empty()
                           ? repo + " is gated (" + std::to_string(reply.status) + " on " + what +
                                 "): accept its terms at " + page +
                                 " and set HF_TOKEN to an access token of yours (huggingface.co/settings/tokens)"
                           : "the token in HF_TOKEN has no access to " + repo + " (" + std::to_string(reply.status) +
                                 " on " + what + "): accept its terms at " + page + " with that account");
    throw HubError(HubErrorKind::Http, settings.endpoint + " answered " + std::to_string(reply.status) + " to " +
                                           what + " of " + repo + ": " + error_text(reply));
}

// The hub pages long listings (as GitHub does): the Link header names the
// next page, `<URL>; rel="next"` (huggingface_hub's paginate follows it).
// A URL without a host is the endpoint's.
std::string next_page(const std::string& link, const std::string& endpoint) {
    const std::size_t rel = link.find("rel=\"next\"");
    if (rel == std::string::npos)
        return {};
    const std::size_t open = link.rfind('<', rel);
    const std::size_t close = link.find('>', open);
    if (open == std::string::npos || close == std::string::npos || close > rel)
        return {};
    std::string url = link.substr(open + 1, close - open - 1);
    if (url.starts_with('/')) {
        const std::size_t host_end = endpoint.find('/', endpoint.find("://") + 3);
        url = endpoint.substr(0, host_end) + url;
    }
    return url;
}

// The JSON `url` answers; `next` (when given) gets the URL of the next page
// its Link header names, or "" on the last page.
nlohmann::json get_json(const std::string& url, const std::string& repo, const HubSettings& settings,
                        const std::string& what, std::string* next = nullptr) {
    const HttpReply reply = http_get(url, {settings.token, settings.ca_file});
    if (reply.status != 200)
        throw_refusal(reply, repo, settings, what);
    if (next)
        *next = next_page(reply.header("link"), settings.endpoint);
    try {
        return nlohmann::json::parse(reply.body);
    } catch (const nlohmann::json::exception& e) {
        throw HubError(HubErrorKind::Http, url + " did not answer JSON (" + e.what() + ")");
    }
}

// A JSON answer whose fields are not of the types the hub sends.
HubError unexpected_shape(const std::string& repo, const std::string& what, const nlohmann::json::exception& e) {
    return HubError(HubErrorKind::Http, "the hub's " + what + " of " + repo + " is not in the shape it sends (" +
                                            e.what() + ")");
}

RepoFile repo_file_of(const nlohmann::json& item) {
    RepoFile f{item["path"].get<std::string>(), item.value("size", std::uint64_t{0}), item.value("oid", ""), false};
    if (item.contains("lfs") && item["lfs"].is_object() && is_hex(item["lfs"].value("oid", ""), 64)) {
        f.oid = item["lfs"]["oid"].get<std::string>();
        f.size = item["lfs"].value("size", f.size);
        f.lfs = true;
    }
    return f;
}

std::string without_quotes(std::string etag) {
    if (etag.starts_with("W/"))
        etag.erase(0, 2);
    if (etag.size() >= 2 && etag.front() == '"' && etag.back() == '"')
        etag = etag.substr(1, etag.size() - 2);
    return etag;
}

// 0 for a file that is not there (or whose size cannot be read).
std::uint64_t size_or_zero(const fs::path& file) {
    std::error_code ec;
    const auto size = fs::file_size(file, ec);
    return ec ? 0 : size;
}

std::string mib(std::uint64_t bytes) {
    char text[32];
    std::snprintf(text, sizeof text, "%.1f", static_cast<double>(bytes) / (1 << 20));
    return text;
}

void check_space(const fs::path& folder, std::uint64_t needed, const std::string& file) {
    std::error_code ec;
    const fs::space_info space = fs::space(folder, ec);
    if (!ec && space.available < needed)
        throw HubError(HubErrorKind::DiskFull, "not enough disk space for " + file + ": it needs " + mib(needed) +
                                                   " MiB more in " + folder.string() + ", which has " +
                                                   mib(space.available) + " MiB free (LLAMA_CACHE moves the cache)");
}

// The hash the file must have: the LFS oid, else the one the hub's redirect
// named (X-Linked-ETag), else git's blob oid.
void verify(const fs::path& part, const RepoFile& file, const HttpReply& reply) {
    std::string expected = file.lfs ? file.oid : without_quotes(reply.header("x-linked-etag"));
    std::string actual;
    if (is_hex(expected, 64))
        actual = file_sha256(part);
    else if (expected = file.oid; is_hex(expected, 40))
        actual = file_git_blob_sha1(part);
    else
        return; // the hub named no hash: nothing to check against
    if (actual == expected)
        return;
    std::error_code ec;
    fs::remove(part, ec);
    throw HubError(HubErrorKind::ChecksumMismatch,
                   file.path + ": the downloaded bytes hash to " + actual + " but the hub's hash is " + expected +
                       "; the download was removed (run the same command again to fetch it afresh)");
}

} // namespace

std::string HubClient::main_commit(const std::string& repo) const try {
    const auto json =
        get_json(settings_.endpoint + "api/models/" + repo + "/refs", repo, settings_, "the list of its branches");
    std::string fallback;
    if (json.is_object() && json.contains("branches") && json["branches"].is_array())
        for (const auto& branch : json["branches"]) {
            if (!branch.is_object())
                continue;
            const std::string name = branch.value("name", "");
            const std::string commit = branch.value("targetCommit", "");
            if (!is_hex(commit, 40))
                continue;
            if (name == "main")
                return commit;
            if (fallback.empty())
                fallback = commit;
        }
    if (fallback.empty())
        throw HubError(HubErrorKind::Http, repo + " has no branch with a commit on " + settings_.endpoint);
    return fallback;
} catch (const nlohmann::json::exception& e) {
    throw unexpected_shape(repo, "branches", e);
}

std::vector<RepoFile> HubClient::list_files(const std::string& repo, const std::string& commit) const try {
    std::vector<RepoFile> files;
    std::string url = settings_.endpoint + "api/models/" + repo + "/tree/" + commit + "?recursive=true";
    while (!url.empty()) {
        const auto page = get_json(url, repo, settings_, "the list of its files", &url);
        if (!page.is_array())
            throw HubError(HubErrorKind::Http, "the file list of " + repo + " is not a JSON array");
        for (const auto& item : page) {
            if (!item.is_object() || item.value("type", "") != "file" || !is_safe_relative(item.value("path", "")))
                continue;
            RepoFile f = repo_file_of(item);
            if (f.oid.empty() || is_hex(f.oid, 40) || is_hex(f.oid, 64)) // else it cannot name a blob file
                files.push_back(std::move(f));
        }
    }
    return files;
} catch (const nlohmann::json::exception& e) {
    throw unexpected_shape(repo, "file list", e);
}

namespace {

// Fills `part` with the file's bytes, resuming what is there, with up to
// `attempts` tries; throws HubError for a refusal, a full disk, a cancel or
// a download that did not finish.
DownloadOutcome download_part(const std::string& url, const fs::path& part, const RepoFile& file,
                              const std::string& repo, const HubSettings& settings,
                              const std::function<bool(const TransferProgress&)>& progress) {
    DownloadOutcome outcome;
    if (file.size > 0 && size_or_zero(part) == file.size) { // finished before, not yet checked
        outcome.complete = true;
        outcome.bytes = file.size;
        return outcome;
    }
    std::error_code ec;
    for (int attempt = 0; attempt < std::max(1, settings.attempts) && !outcome.complete; ++attempt) {
        std::this_thread::sleep_for(kRetryStep * std::max(0, attempt - 1));
        outcome = http_download(url, {settings.token, settings.ca_file}, part, file.size, progress);
        if (outcome.bytes == 0)
            fs::remove(part, ec); // nothing came: leave no empty download behind
        if (outcome.reply.status >= 300 && outcome.reply.status < 500) // a refusal: asking again will not help
            throw_refusal(outcome.reply, repo, settings, "the download of " + file.path);
        if (outcome.reply.status >= 500)
            outcome.reply.failure = "the server answered " + std::to_string(outcome.reply.status);
        if (outcome.disk_full)
            throw HubError(HubErrorKind::DiskFull,
                           "the disk filled up while downloading " + file.path + " into " + part.string() + " (" +
                               mib(outcome.bytes) + " MiB so far" + (outcome.bytes > 0 ? ", kept for a resume" : "") +
                               "; LLAMA_CACHE moves the cache)");
        if (outcome.cancelled)
            throw HubError(HubErrorKind::Cancelled, "the download of " + file.path + " was cancelled at " +
                                                        mib(outcome.bytes) + " MiB (kept in " + part.string() +
                                                        " to resume)");
    }
    if (!outcome.complete)
        throw HubError(HubErrorKind::Network,
                       "the download of " + file.path + " stopped at " + mib(outcome.bytes) + " of " + mib(file.size) +
                           " MiB (" + (outcome.reply.failure.empty() ? "no answer" : outcome.reply.failure) +
                           "); run the same command again to resume from there");
    return outcome;
}

// Holds an exclusive flock on a lock file while it lives: another kvscope,
// or huggingface_hub (whose py-filelock flocks the same file), downloading
// the same blob waits here rather than writing the same part file.
class BlobLock {
public:
    explicit BlobLock(const fs::path& file) {
        fs::create_directories(file.parent_path());
        fd_ = ::open(file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
        if (fd_ < 0)
            throw HubError(HubErrorKind::DiskFull, "cannot create the lock file " + file.string() + ": " +
                                                       std::strerror(errno));
        while (::flock(fd_, LOCK_EX) != 0 && errno == EINTR) {
        }
    }
    ~BlobLock() { ::close(fd_); } // closing releases the flock
    BlobLock(const BlobLock&) = delete;
    BlobLock& operator=(const BlobLock&) = delete;

private:
    int fd_ = -1;
};

} // namespace

fs::path HubClient::fetch_blob(const std::string& repo, const std::string& commit, const RepoFile& file,
                               const std::function<bool(const TransferProgress&)>& progress) const {
    const HubCache cache(settings_.cache_dir);
    const fs::path target =
        file.oid.empty() ? cache.snapshot_path(repo, commit, file.path) : cache.blob_path(repo, file.oid);
    if (fs::exists(target))
        return target;
    const BlobLock lock(cache.lock_path(repo, file.oid.empty() ? file.path : file.oid));
    if (fs::exists(target)) // the download we waited for has put it there
        return target;
    fs::create_directories(target.parent_path());
    const fs::path part = HubCache::in_progress_path(target);
    std::error_code ec;
    if (file.size > 0 && size_or_zero(part) > file.size)
        fs::remove(part, ec); // longer than the file: not a prefix of it
    const std::uint64_t have = size_or_zero(part);
    check_space(target.parent_path(), file.size > have ? file.size - have : 0, file.path);

    const std::string url = settings_.endpoint + repo + "/resolve/" + commit + "/" + escape_path(file.path);
    const DownloadOutcome outcome = download_part(url, part, file, repo, settings_, progress);
    if (file.size > 0 && outcome.bytes != file.size) {
        fs::remove(part, ec);
        throw HubError(HubErrorKind::ChecksumMismatch, file.path + ": the download holds " +
                                                           std::to_string(outcome.bytes) + " bytes, the hub says " +
                                                           std::to_string(file.size) + "; the download was removed");
    }
    verify(part, file, outcome.reply);
    fs::rename(part, target); // atomic: the final name never holds unchecked bytes
    return target;
}

CachedModel HubClient::pull(const HubReference& ref, const PullProgress& progress) const {
    const HubCache cache(settings_.cache_dir);
    const std::string commit = main_commit(ref.repo);
    const std::vector<RepoFile> chosen = choose_gguf(list_files(ref.repo, commit), ref.quant, ref.repo);
    CachedModel model{ref.repo, commit, {}};
    for (std::size_t i = 0; i < chosen.size(); ++i) {
        const RepoFile& file = chosen[i];
        fs::path path = cache.snapshot_path(ref.repo, commit, file.path);
        if (!fs::exists(path)) {
            const auto report = [&](const TransferProgress& t) {
                return !progress ||
                       progress({file.path, static_cast<int>(i + 1), static_cast<int>(chosen.size()), t});
            };
            path = cache.link_snapshot(ref.repo, commit, file.path, fetch_blob(ref.repo, commit, file, report));
        }
        model.files.push_back(path);
    }
    cache.write_ref(ref.repo, "main", commit);
    return model;
}

std::optional<CachedModel> find_cached_model(const fs::path& cache_dir, const HubReference& ref) {
    const HubCache cache(cache_dir);
    const auto commit = cache.cached_commit(ref.repo);
    if (!commit)
        return std::nullopt;
    CachedModel model{ref.repo, *commit, {}};
    try {
        for (const RepoFile& f : choose_gguf(cache.cached_files(ref.repo), ref.quant, ref.repo))
            model.files.push_back(cache.snapshot_path(ref.repo, *commit, f.path));
    } catch (const HubError&) {
        return std::nullopt; // not this quant, or a part missing: the hub has to be asked
    }
    return model;
}

CachedModel resolve_model(const HubReference& ref, const HubSettings& settings, const PullProgress& progress) {
    if (auto cached = find_cached_model(settings.cache_dir, ref))
        return *cached;
    return HubClient(settings).pull(ref, progress);
}

std::string format_progress(const FileProgress& p) {
    const TransferProgress& t = p.transfer;
    std::string line = p.file;
    if (p.count > 1)
        line += " [" + std::to_string(p.index) + "/" + std::to_string(p.count) + "]";
    line += "  " + mib(t.done) + (t.total > 0 ? " / " + mib(t.total) : std::string()) + " MiB";
    const double rate = t.seconds > 0 ? static_cast<double>(t.done - t.resumed_from) / t.seconds : 0;
    if (rate > 0) {
        line += "  " + mib(static_cast<std::uint64_t>(rate)) + " MiB/s";
        if (t.total > t.done) {
            const auto left = static_cast<long long>(static_cast<double>(t.total - t.done) / rate + 0.5);
            char text[48];
            std::snprintf(text, sizeof text, "  %lld:%02lld left", left / 60, left % 60);
            line += text;
        }
    }
    return line;
}

} // namespace kvscope::hub
