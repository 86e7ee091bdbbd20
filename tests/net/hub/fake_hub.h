// tests/net/hub: a Hugging Face Hub on loopback (HTTP, or HTTPS with a test
// certificate), answering the requests the hub client makes in the shapes
// the real hub answers them. The shapes come from the clients that read
// them, since the real hub could not be reached from the machines these
// tests were written on: llama.cpp's common/hf-cache.cpp and
// common/download.cpp (commit 0ad4a86) and huggingface_hub's
// utils/_http.py (hf_raise_for_status) and file_download.py:
//
//   GET /api/models/ORG/NAME/refs
//     200 {"branches":[{"name":"main","ref":"refs/heads/main","targetCommit":"<40 hex>"}],
//          "converts":[],"tags":[],"pullRequests":null}
//     401 X-Error-Code: RepoNotFound {"error":"Repository not found"}   (no such repository)
//   GET /api/models/ORG/NAME/tree/COMMIT?recursive=true
//     200 [{"type":"directory","oid":..,"size":0,"path":"sub"},
//          {"type":"file","oid":"<git blob sha1>","size":N,"path":"x.gguf",
//           "lfs":{"oid":"<sha256>","size":N,"pointerSize":134}}, ...]
//     (a gated repository lists its files to anyone, as the real hub does)
//     long listings come in pages: Link: </api/models/ORG/NAME/tree/COMMIT?recursive=true&cursor=C>; rel="next"
//   GET /ORG/NAME/resolve/COMMIT/PATH
//     LFS file: 302 Location: <file server>/cdn/<sha256>, X-Linked-ETag: "<sha256>",
//               X-Linked-Size: N, X-Repo-Commit: COMMIT, ETag: "<git oid>",
//               body "Found. Redirecting to <location>"
//     git file: 200 the bytes, ETag: "<git oid>"
//     gated, no valid token: 401 X-Error-Code: GatedRepo {"error":"Access to model ORG/NAME is restricted..."}
//   GET /cdn/<sha256>   the bytes; "Range: bytes=N-" answered 206 with the rest
//
// Faults a test asks for: a download that drops the connection after some
// bytes, one that stalls after some bytes, a file whose served bytes differ from its hash.
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace kvscope::test {

struct FakeHubFile {
    std::string path;  // in the repository
    std::string bytes; // its content
    bool lfs = true;   // listed with an "lfs" object and served through the CDN redirect
};

struct FakeHubRepo {
    std::string id;     // "ORG/NAME"
    std::string commit; // 40 hex
    std::vector<FakeHubFile> files;
    bool gated = false; // downloads need "Authorization: Bearer <FakeHub::kToken>"
};

class FakeHub {
public:
    static constexpr const char* kToken = "hf_fakeTokenForTheLoopbackHubOnly0123456789";

    // Listens on 127.0.0.1 (a free port) at once; HTTPS when `cert` and
    // `key` name PEM files. Throws std::runtime_error when it cannot.
    explicit FakeHub(std::vector<FakeHubRepo> repos, const std::string& cert = {}, const std::string& key = {});
    ~FakeHub();
    FakeHub(const FakeHub&) = delete;
    FakeHub& operator=(const FakeHub&) = delete;

    std::string endpoint() const; // "http://127.0.0.1:PORT/" (or https://)

    // The next download of `path` sends its bytes up to `bytes` and then
    // closes the connection, though it promised the whole file.
    void drop_next_download(const std::string& path, std::size_t bytes);
    // The next download of `path` sends its bytes up to `bytes` and then
    // nothing more, the connection held open, until the client hangs up or
    // the hub is destroyed (a download for a test to cancel mid-way).
    void stall_next_download(const std::string& path, std::size_t bytes);
    // Downloads of `path` serve its bytes with one flipped, under the right hash.
    void corrupt(const std::string& path);
    // The tree listing in pages of `items` (0: one page), each but the last
    // with the Link header the real hub sends: </api/...&cursor=C>; rel="next".
    void set_tree_page_size(std::size_t items);
    // Every file-server request: "<sha256> <Range header or '-'>".
    std::vector<std::string> cdn_requests() const;
    // How many requests of any kind it has answered.
    int requests() const;

    static std::string sha256(const std::string& bytes);
    static std::string git_blob_sha1(const std::string& bytes);

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

} // namespace kvscope::test
