#include "fake_hub.h"

#include <chrono>
#include <condition_variable>
#include <map>
#include <stdexcept>
#include <thread>

#include <QByteArray>
#include <QCryptographicHash>

#include <httplib.h>
#include <nlohmann/json.hpp>

namespace kvscope::test {
namespace {

std::string hex_hash(const std::string& bytes, QCryptographicHash::Algorithm algorithm, const std::string& prefix) {
    QCryptographicHash hash(algorithm);
    hash.addData(QByteArrayView(prefix.data(), static_cast<qsizetype>(prefix.size())));
    hash.addData(QByteArrayView(bytes.data(), static_cast<qsizetype>(bytes.size())));
    return hash.result().toHex().toStdString();
}

void refuse(httplib::Response& res, int status, const std::string& code, const std::string& message) {
    res.status = status;
    if (!code.empty())
        res.set_header("X-Error-Code", code);
    res.set_content(nlohmann::json{{"error", message}}.dump(), "application/json");
}

} // namespace

std::string FakeHub::sha256(const std::string& bytes) { return hex_hash(bytes, QCryptographicHash::Sha256, {}); }

std::string FakeHub::git_blob_sha1(const std::string& bytes) {
    std::string prefix = "blob " + std::to_string(bytes.size());
    prefix += '\0';
    return hex_hash(bytes, QCryptographicHash::Sha1, prefix);
}

struct FakeHub::Impl {
    std::vector<FakeHubRepo> repos;
    std::unique_ptr<httplib::Server> server;
    std::string scheme;
    int port = 0;
    std::thread thread;

    mutable std::mutex mutex;
    std::map<std::string, std::size_t> drops; // path → bytes before the connection closes
    std::map<std::string, bool> corrupted;
    std::map<std::string, std::size_t> stalls; // path → bytes before the download stalls
    std::condition_variable stopping_changed;
    bool stopping = false; // the destructor's: stalled downloads end
    std::size_t page_size = 0; // of the tree listing; 0: one page
    std::vector<std::string> cdn_log;
    int answered = 0;

    const FakeHubRepo* repo(const std::string& id) const {
        for (const FakeHubRepo& r : repos)
            if (r.id == id)
                return &r;
        return nullptr;
    }

    // The file and its repository for a CDN hash.
    std::pair<const FakeHubRepo*, const FakeHubFile*> by_hash(const std::string& sha) const {
        for (const FakeHubRepo& r : repos)
            for (const FakeHubFile& f : r.files)
                if (FakeHub::sha256(f.bytes) == sha)
                    return {&r, &f};
        return {nullptr, nullptr};
    }

    void count() {
        std::lock_guard lock(mutex);
        ++answered;
    }

    void refs(const httplib::Request& req, httplib::Response& res) {
        count();
        const FakeHubRepo* r = repo(req.matches[1]);
        if (!r)
            return refuse(res, 401, "RepoNotFound", "Repository not found");
        const nlohmann::json body{
            {"branches", {{{"name", "main"}, {"ref", "refs/heads/main"}, {"targetCommit", r->commit}}}},
            {"converts", nlohmann::json::array()},
            {"tags", nlohmann::json::array()},
            {"pullRequests", nullptr}};
        res.set_content(body.dump(), "application/json");
    }

    void tree(const httplib::Request& req, httplib::Response& res) {
        count();
        const FakeHubRepo* r = repo(req.matches[1]);
        if (!r)
            return refuse(res, 401, "RepoNotFound", "Repository not found");
        if (req.matches[2] != r->commit || req.get_param_value("recursive") != "true")
            return refuse(res, 404, "RevisionNotFound", "Invalid rev id: " + std::string(req.matches[2]));
        nlohmann::json list = nlohmann::json::array();
        std::map<std::string, bool> folders;
        for (const FakeHubFile& f : r->files)
            if (const auto slash = f.path.rfind('/'); slash != std::string::npos)
                folders[f.path.substr(0, slash)] = true;
        for (const auto& [folder, _] : folders)
            list.push_back({{"type", "directory"}, {"oid", git_blob_sha1(folder)}, {"size", 0}, {"path", folder}});
        for (const FakeHubFile& f : r->files) {
            nlohmann::json item{
                {"type", "file"}, {"oid", git_blob_sha1(f.bytes)}, {"size", f.bytes.size()}, {"path", f.path}};
            if (f.lfs)
                item["lfs"] = {{"oid", sha256(f.bytes)}, {"size", f.bytes.size()}, {"pointerSize", 134}};
            list.push_back(item);
        }
        send_page(list, req, *r, res);
    }

    // The listing whole, or the page the cursor asks for with a Link to the next.
    void send_page(const nlohmann::json& list, const httplib::Request& req, const FakeHubRepo& r,
                   httplib::Response& res) const {
        std::size_t page = 0;
        {
            std::lock_guard lock(mutex);
            page = page_size;
        }
        const std::size_t from = req.has_param("cursor") ? std::stoul(req.get_param_value("cursor")) : 0;
        const std::size_t to = page == 0 ? list.size() : std::min(list.size(), from + page);
        if (to < list.size())
            res.set_header("Link", "</api/models/" + r.id + "/tree/" + r.commit + "?recursive=true&cursor=" +
                                       std::to_string(to) + ">; rel=\"next\"");
        const auto begin = list.begin() + static_cast<long>(std::min(from, to));
        res.set_content(nlohmann::json(begin, list.begin() + static_cast<long>(to)).dump(), "application/json");
    }

    void resolve(const httplib::Request& req, httplib::Response& res) {
        count();
        const FakeHubRepo* r = repo(req.matches[1]);
        if (!r)
            return refuse(res, 401, "RepoNotFound", "Repository not found");
        if (r->gated && req.get_header_value("Authorization") != std::string("Bearer ") + FakeHub::kToken)
            return refuse(res, 401, "GatedRepo",
                          "Access to model " + r->id +
                              " is restricted. You must have access to it and be authenticated to access it. "
                              "Please log in.");
        for (const FakeHubFile& f : r->files) {
            if (f.path != std::string(req.matches[3]))
                continue;
            res.set_header("X-Repo-Commit", r->commit);
            res.set_header("ETag", "\"" + git_blob_sha1(f.bytes) + "\"");
            if (!f.lfs)
                return res.set_content(f.bytes, "application/octet-stream");
            res.set_header("X-Linked-ETag", "\"" + sha256(f.bytes) + "\"");
            res.set_header("X-Linked-Size", std::to_string(f.bytes.size()));
            // The real hub's redirect carries a short text body too, which must not end up in the file.
            // (Not on a Range request: httplib would apply the range to that body and answer 416.)
            res.set_redirect("/cdn/" + sha256(f.bytes), 302);
            if (!req.has_header("Range"))
                res.set_content("Found. Redirecting to /cdn/" + sha256(f.bytes), "text/plain; charset=utf-8");
            return;
        }
        refuse(res, 404, "EntryNotFound", std::string(req.matches[3]) + " does not exist on \"main\"");
    }

    void cdn(const httplib::Request& req, httplib::Response& res) {
        count();
        const std::string sha = req.matches[1];
        const auto [r, f] = by_hash(sha);
        if (!f)
            return refuse(res, 404, {}, "no such object");
        std::optional<std::size_t> drop_at;
        std::optional<std::size_t> stall_at;
        std::string bytes = f->bytes;
        {
            std::lock_guard lock(mutex);
            cdn_log.push_back(sha + " " + (req.has_header("Range") ? req.get_header_value("Range") : "-"));
            if (const auto it = drops.find(f->path); it != drops.end()) {
                drop_at = it->second;
                drops.erase(it);
            }
            if (const auto it = stalls.find(f->path); it != stalls.end()) {
                stall_at = it->second;
                stalls.erase(it);
            }
            if (corrupted.count(f->path))
                bytes[bytes.size() / 2] = static_cast<char>(bytes[bytes.size() / 2] ^ 0x5a);
        }
        if (stall_at)
            return stall(res, std::move(bytes), *stall_at);
        if (!drop_at)
            return res.set_content(bytes, "application/octet-stream");
        // Promises the whole (ranged) body, sends up to drop_at, then hangs up.
        res.set_content_provider(
            bytes.size(), "application/octet-stream",
            [bytes, at = *drop_at](std::size_t offset, std::size_t length, httplib::DataSink& sink) {
                const std::size_t end = std::min(offset + length, at);
                if (offset < end)
                    sink.write(bytes.data() + offset, end - offset);
                return false;
            });
    }

    // Promises the whole body, sends up to `at`, then waits, sending
    // nothing, until the client hangs up or the hub stops.
    void stall(httplib::Response& res, std::string bytes, std::size_t at) {
        const std::size_t size = bytes.size(); // before the lambda takes the bytes
        res.set_content_provider(
            size, "application/octet-stream",
            [this, bytes = std::move(bytes), at](std::size_t offset, std::size_t length, httplib::DataSink& sink) {
                const std::size_t end = std::min(offset + length, at);
                if (offset < end)
                    return sink.write(bytes.data() + offset, end - offset);
                std::unique_lock lock(mutex);
                while (!stopping && sink.is_writable())
                    stopping_changed.wait_for(lock, std::chrono::milliseconds(50));
                return false;
            });
    }
};

FakeHub::FakeHub(std::vector<FakeHubRepo> repos, const std::string& cert, const std::string& key)
    : impl_(std::make_unique<Impl>()) {
    Impl& s = *impl_;
    s.repos = std::move(repos);
    if (cert.empty()) {
        s.server = std::make_unique<httplib::Server>();
        s.scheme = "http";
    } else {
        s.server = std::make_unique<httplib::SSLServer>(cert.c_str(), key.c_str());
        s.scheme = "https";
    }
    if (!s.server->is_valid())
        throw std::runtime_error("the fake hub's server could not start (certificate?)");
    const std::string repo = "([A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+)";
    s.server->Get("/api/models/" + repo + "/refs", [&s](const auto& req, auto& res) { s.refs(req, res); });
    s.server->Get("/api/models/" + repo + "/tree/([0-9a-f]+)", [&s](const auto& req, auto& res) { s.tree(req, res); });
    s.server->Get("/" + repo + "/resolve/([0-9a-f]+)/(.+)", [&s](const auto& req, auto& res) { s.resolve(req, res); });
    s.server->Get("/cdn/([0-9a-f]{64})", [&s](const auto& req, auto& res) { s.cdn(req, res); });
    s.port = s.server->bind_to_any_port("127.0.0.1");
    if (s.port <= 0)
        throw std::runtime_error("the fake hub could not bind a loopback port");
    s.thread = std::thread([&s] { s.server->listen_after_bind(); });
}

FakeHub::~FakeHub() {
    {
        std::lock_guard lock(impl_->mutex);
        impl_->stopping = true;
    }
    impl_->stopping_changed.notify_all();
    impl_->server->stop();
    impl_->thread.join();
}

std::string FakeHub::endpoint() const {
    return impl_->scheme + "://127.0.0.1:" + std::to_string(impl_->port) + "/";
}

void FakeHub::drop_next_download(const std::string& path, std::size_t bytes) {
    std::lock_guard lock(impl_->mutex);
    impl_->drops[path] = bytes;
}

void FakeHub::stall_next_download(const std::string& path, std::size_t bytes) {
    std::lock_guard lock(impl_->mutex);
    impl_->stalls[path] = bytes;
}

void FakeHub::corrupt(const std::string& path) {
    std::lock_guard lock(impl_->mutex);
    impl_->corrupted[path] = true;
}

void FakeHub::set_tree_page_size(std::size_t items) {
    std::lock_guard lock(impl_->mutex);
    impl_->page_size = items;
}

std::vector<std::string> FakeHub::cdn_requests() const {
    std::lock_guard lock(impl_->mutex);
    return impl_->cdn_log;
}

int FakeHub::requests() const {
    std::lock_guard lock(impl_->mutex);
    return impl_->answered;
}

} // namespace kvscope::test
