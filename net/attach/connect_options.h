// net/attach: what to attach to, and the one parser of it. The app's
// Connect dialog and `kvscope --connect`, and `kvscope-cli top`, all hand
// the text a person typed to parse_connect_options, so the same text means
// the same options (and the same error) everywhere.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/core/error.h"
#include "net/attach/remote_sample.h"

namespace kvscope::attach {

class ConnectOptionsError : public Error {
public:
    using Error::Error;
};

struct ConnectOptions {
    std::string url{};                 // http://HOST:PORT or https://HOST:PORT of the server's HTTP API
    std::optional<ServerKind> kind;  // nullopt: detected from /v1/models, /props, /kv/snapshot, /metrics
    std::string api_key{};             // sent as "Authorization: Bearer KEY" when not empty
    // vLLM: one ZeroMQ PUB endpoint per data-parallel rank, rank 0 first
    // ("tcp://HOST:5557", "tcp://HOST:5558", ...), and optionally their
    // replay (ROUTER) endpoints, in the same order.
    std::vector<std::string> kv_events;
    std::vector<std::string> kv_replay;
    std::string kv_topic{};            // the publisher's topic ("" subscribes to all)
    // llama.cpp does not report its KV cache type: the user says it (-ctk).
    std::string kv_dtype = "f16";
    // Nor whether its slots share one KV buffer (-kvu, the default with
    // -np auto) or own one each: yes, no, or nullopt to guess (shared with
    // 4 slots, -np auto's count; separate otherwise; separate whenever the
    // slots hold more together than one slot's context).
    std::optional<bool> kv_unified;
    std::chrono::milliseconds interval{1000}; // between polls
    std::chrono::milliseconds timeout{3000};  // one HTTP request's limit
};

// Throws ConnectOptionsError (a kvscope::Error) for options that cannot
// work: an URL that is not http(s)://HOST:PORT, an endpoint that is not
// tcp://HOST:PORT, more replay endpoints than event endpoints, a KV dtype
// llama.cpp does not have.
void validate(const ConnectOptions& options);

// "yes" / "no" as --kv-unified takes them; "auto" or "" is nullopt (guess).
// Throws ConnectOptionsError for anything else.
std::optional<bool> parse_kv_unified(std::string_view text);

// What a person types to attach to a server, as typed: in the Connect
// dialog, after `kvscope --connect`, or as `kvscope-cli top`'s options.
struct ConnectText {
    std::string url{};
    std::string api_key{};
    std::string kind{};       // "auto" (or empty), "kvscope", "llama.cpp", "vllm"
    std::string kv_events{};  // comma-separated tcp://HOST:PORT, one per vLLM rank
    std::string kv_replay{};  // comma-separated, in the same order
    std::string kv_topic{};   // the publishers' topic; empty: every topic
    std::string kv_dtype{};   // llama.cpp's -ctk; empty: f16
    std::string kv_unified{}; // "yes", "no", "auto" or empty: guess
};

// The kinds ConnectText::kind takes: "auto" (detect) first, then each
// server kind's name.
std::vector<std::string_view> connect_kind_names();

// The options the text asks for: every field trimmed of spaces, the URL of
// trailing '/', lists split at commas with empty items dropped, then
// validate()d. Throws ConnectOptionsError saying what to fix.
ConnectOptions parse_connect_options(const ConnectText& text);

} // namespace kvscope::attach
