// net/hub: the HTTP requests the hub client makes, over libcurl: a small
// GET read into memory (the API's JSON) and a download appended to a file
// with an HTTP Range resume. libcurl follows the hub's redirects to its
// file servers (dropping the token when the host changes), verifies
// certificates (on by default; HubSettings::ca_file replaces the system's
// store), and takes proxies from http_proxy / https_proxy / no_proxy.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <string>

namespace kvscope::hub {

struct HttpOptions {
    std::string token;   // "Authorization: Bearer TOKEN" when not empty
    std::string ca_file; // PEM file of trusted certificates; empty: the system's
};

struct HttpReply {
    long status = 0; // the last response's (after redirects); 0 when none came
    std::string body;
    // Header fields of every response of the redirect chain, names in lower
    // case, the first of each name kept (the hub's X-Linked-ETag rides on
    // its redirect, not on the file server's answer).
    std::map<std::string, std::string> headers;
    std::string failure; // libcurl's message when the transfer itself failed, else empty
    std::string header(const std::string& lower_name) const;
};

// GET `url`; throws HubError(Network) when nothing answers.
HttpReply http_get(const std::string& url, const HttpOptions& options);

struct TransferProgress {
    std::uint64_t done = 0;         // bytes of the file on disk so far, resumed ones included
    std::uint64_t total = 0;        // the whole file's bytes; 0 while unknown
    std::uint64_t resumed_from = 0; // bytes there were before this transfer
    double seconds = 0;             // since this transfer started
};
// Called at most about ten times a second and once at the end; returning
// false cancels the download (the partial file stays for a resume).
using ProgressCallback = std::function<bool(const TransferProgress&)>;

struct DownloadOutcome {
    HttpReply reply;          // body: the error body of a refusal (the file's bytes go to the file)
    bool complete = false;    // a 2xx answer, read to its end
    bool disk_full = false;   // a write failed with ENOSPC
    bool cancelled = false;   // the progress callback said stop
    std::uint64_t bytes = 0;  // the part file's size afterwards
};

// Appends `url`'s bytes to `part` (created if absent), asking for the rest
// from its current size with "Range: bytes=N-"; a server that answers the
// whole file (200) instead has the part file restarted from empty.
// `expected_size` (0: unknown) stands in for the total until the server
// says it. Never throws for a failed transfer: the outcome says what happened.
DownloadOutcome http_download(const std::string& url, const HttpOptions& options, const std::filesystem::path& part,
                              std::uint64_t expected_size, const ProgressCallback& progress);

} // namespace kvscope::hub
