#include "net/hub/http_transfer.h"

#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <memory>
#include <mutex>

#include <curl/curl.h>

#include "net/hub/hub_error.h"

namespace kvscope::hub {
namespace {

using Clock = std::chrono::steady_clock;
constexpr std::size_t kMaxBody = 64u << 20;          // an API answer bigger than this is not the hub's
constexpr std::size_t kMaxErrorBody = 64u << 10;      // of a refused download, kept for the message
constexpr auto kProgressInterval = std::chrono::milliseconds(100);
constexpr long kConnectTimeoutS = 30;
constexpr long kStallSeconds = 60; // under 1 byte/s for this long: the connection is dead

void init_curl_once() {
    static std::once_flag once;
    std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

using Easy = std::unique_ptr<CURL, decltype(&curl_easy_cleanup)>;
using HeaderList = std::unique_ptr<curl_slist, decltype(&curl_slist_free_all)>;

std::string trim(std::string text) {
    while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back())))
        text.pop_back();
    std::size_t first = 0;
    while (first < text.size() && std::isspace(static_cast<unsigned char>(text[first])))
        ++first;
    return text.substr(first);
}

std::size_t on_header(char* data, std::size_t size, std::size_t count, void* user) {
    auto& headers = *static_cast<std::map<std::string, std::string>*>(user);
    const std::string line(data, size * count);
    if (const std::size_t colon = line.find(':'); colon != std::string::npos) {
        std::string name = line.substr(0, colon);
        for (char& c : name)
            c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        headers.emplace(std::move(name), trim(line.substr(colon + 1)));
    }
    return size * count;
}

std::size_t on_body(char* data, std::size_t size, std::size_t count, void* user) {
    auto& body = *static_cast<std::string*>(user);
    if (body.size() + size * count > kMaxBody)
        return 0;
    body.append(data, size * count);
    return size * count;
}

// One easy handle with what every request shares; `list` keeps the headers alive.
Easy make_handle(const std::string& url, const HttpOptions& options, HeaderList& list, HttpReply& reply) {
    init_curl_once();
    Easy easy(curl_easy_init(), &curl_easy_cleanup);
    if (!easy)
        throw HubError(HubErrorKind::Network, "libcurl could not start a request");
    CURL* h = easy.get();
    curl_easy_setopt(h, CURLOPT_URL, url.c_str());
    curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 1L);
    curl_easy_setopt(h, CURLOPT_MAXREDIRS, 10L);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, kConnectTimeoutS);
    curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, kStallSeconds);
    curl_easy_setopt(h, CURLOPT_USERAGENT, "kvscope");
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    if (!options.ca_file.empty())
        curl_easy_setopt(h, CURLOPT_CAINFO, options.ca_file.c_str());
    curl_slist* raw = nullptr;
    raw = curl_slist_append(raw, "Accept: application/json, */*");
    if (!options.token.empty())
        raw = curl_slist_append(raw, ("Authorization: Bearer " + options.token).c_str());
    list.reset(raw);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, raw);
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, &on_header);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, &reply.headers);
    return easy;
}

long status_of(CURL* h) {
    long status = 0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    return status;
}

struct DownloadState {
    std::FILE* file = nullptr;
    std::filesystem::path part;
    CURL* handle = nullptr;
    DownloadOutcome* outcome = nullptr;
    std::uint64_t resumed_from = 0;
    std::uint64_t expected_size = 0;
    bool checked_status = false;
    bool refused = false;
    const ProgressCallback* progress = nullptr;
    Clock::time_point start = Clock::now();
    Clock::time_point last_report{};
};

// The first bytes of the answer: a refusal's body goes to the reply, not the
// file; a 200 to a Range request restarts the file.
bool check_status(DownloadState& s) {
    const long status = status_of(s.handle);
    s.refused = status < 200 || status >= 300;
    if (!s.refused && status == 200 && s.resumed_from > 0) {
        s.file = std::freopen(s.part.c_str(), "wb", s.file);
        s.resumed_from = 0;
    }
    s.checked_status = true;
    return s.file != nullptr;
}

std::size_t on_file_bytes(char* data, std::size_t size, std::size_t count, void* user) {
    auto& s = *static_cast<DownloadState*>(user);
    const std::size_t n = size * count;
    if (!s.checked_status && !check_status(s))
        return 0;
    if (s.refused) {
        std::string& body = s.outcome->reply.body;
        body.append(data, std::min(n, kMaxErrorBody - std::min(kMaxErrorBody, body.size())));
        return n;
    }
    if (std::fwrite(data, 1, n, s.file) != n) {
        s.outcome->disk_full = errno == ENOSPC;
        return 0;
    }
    return n;
}

TransferProgress progress_of(const DownloadState& s, curl_off_t now, curl_off_t total) {
    TransferProgress p;
    p.resumed_from = s.resumed_from;
    p.done = s.resumed_from + static_cast<std::uint64_t>(now);
    p.total = total > 0 ? s.resumed_from + static_cast<std::uint64_t>(total) : s.expected_size;
    p.seconds = std::chrono::duration<double>(Clock::now() - s.start).count();
    return p;
}

int on_progress(void* user, curl_off_t total, curl_off_t now, curl_off_t, curl_off_t) {
    auto& s = *static_cast<DownloadState*>(user);
    if (!*s.progress || s.refused || !s.checked_status || Clock::now() - s.last_report < kProgressInterval)
        return 0;
    s.last_report = Clock::now();
    if (!(*s.progress)(progress_of(s, now, total))) {
        s.outcome->cancelled = true;
        return 1;
    }
    return 0;
}

std::uint64_t size_or_zero(const std::filesystem::path& file) {
    std::error_code ec;
    const auto size = std::filesystem::file_size(file, ec);
    return ec ? 0 : size;
}

} // namespace

std::string HttpReply::header(const std::string& lower_name) const {
    const auto it = headers.find(lower_name);
    return it == headers.end() ? std::string() : it->second;
}

HttpReply http_get(const std::string& url, const HttpOptions& options) {
    HttpReply reply;
    HeaderList list(nullptr, &curl_slist_free_all);
    Easy easy = make_handle(url, options, list, reply);
    curl_easy_setopt(easy.get(), CURLOPT_WRITEFUNCTION, &on_body);
    curl_easy_setopt(easy.get(), CURLOPT_WRITEDATA, &reply.body);
    if (const CURLcode code = curl_easy_perform(easy.get()); code != CURLE_OK)
        throw HubError(HubErrorKind::Network, "cannot reach " + url + ": " + curl_easy_strerror(code));
    reply.status = status_of(easy.get());
    return reply;
}

DownloadOutcome http_download(const std::string& url, const HttpOptions& options, const std::filesystem::path& part,
                              std::uint64_t expected_size, const ProgressCallback& progress) {
    DownloadOutcome outcome;
    HeaderList list(nullptr, &curl_slist_free_all);
    Easy easy = make_handle(url, options, list, outcome.reply);
    DownloadState s;
    s.part = part;
    s.handle = easy.get();
    s.outcome = &outcome;
    s.resumed_from = size_or_zero(part);
    s.expected_size = expected_size;
    s.progress = &progress;
    s.file = std::fopen(part.c_str(), "ab");
    if (!s.file) {
        outcome.reply.failure = "cannot open " + part.string() + " for writing";
        outcome.disk_full = errno == ENOSPC;
        return outcome;
    }
    CURL* h = easy.get();
    if (s.resumed_from > 0)
        curl_easy_setopt(h, CURLOPT_RANGE, (std::to_string(s.resumed_from) + "-").c_str());
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, &on_file_bytes);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &s);
    curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, &on_progress);
    curl_easy_setopt(h, CURLOPT_XFERINFODATA, &s);
    const CURLcode code = curl_easy_perform(h);
    const bool flushed = s.file && std::fflush(s.file) == 0;
    if (!flushed && errno == ENOSPC)
        outcome.disk_full = true;
    if (s.file)
        std::fclose(s.file);
    outcome.reply.status = status_of(h);
    outcome.bytes = size_or_zero(part);
    if (code != CURLE_OK)
        outcome.reply.failure = curl_easy_strerror(code);
    outcome.complete = code == CURLE_OK && flushed && !s.refused && outcome.reply.status >= 200 &&
                       outcome.reply.status < 300;
    if (outcome.complete && progress) {
        TransferProgress last = progress_of(s, 0, 0);
        last.done = last.total = outcome.bytes;
        progress(last);
    }
    return outcome;
}

} // namespace kvscope::hub
