#include "net/attach/connect_options.h"

#include <charconv>

#include "net/attach/kv_cache_types.h"

namespace kvscope::attach {
namespace {

using namespace std::chrono_literals;

constexpr std::string_view kDetectKind = "auto"; // ConnectText::kind: detect the server's kind

// "HOST:PORT" after `scheme`, with nothing else but an optional trailing '/'.
bool is_host_port(std::string_view text, std::string_view scheme, bool allow_trailing_slash) {
    if (!text.starts_with(scheme))
        return false;
    text.remove_prefix(scheme.size());
    if (allow_trailing_slash && text.ends_with('/'))
        text.remove_suffix(1);
    const std::size_t colon = text.rfind(':');
    if (colon == std::string_view::npos || colon == 0 || text.find('/') != std::string_view::npos)
        return false;
    const std::string_view port = text.substr(colon + 1);
    int value = 0;
    const auto [end, error] = std::from_chars(port.data(), port.data() + port.size(), value);
    return error == std::errc() && end == port.data() + port.size() && value > 0 && value <= 65535;
}

std::string trimmed(std::string_view text) {
    const std::size_t first = text.find_first_not_of(" \t\r\n");
    if (first == std::string_view::npos)
        return {};
    const std::size_t last = text.find_last_not_of(" \t\r\n");
    return std::string(text.substr(first, last - first + 1));
}

std::vector<std::string> split_commas(std::string_view list) {
    std::vector<std::string> items;
    for (std::size_t at = 0; at <= list.size();) {
        const std::size_t end = std::min(list.find(',', at), list.size());
        if (std::string item = trimmed(list.substr(at, end - at)); !item.empty())
            items.push_back(std::move(item));
        at = end + 1;
    }
    return items;
}

std::string known_kinds() {
    std::string known;
    for (std::string_view name : connect_kind_names())
        known += (known.empty() ? "" : ", ") + std::string(name);
    return known;
}

} // namespace

std::vector<std::string_view> connect_kind_names() {
    std::vector<std::string_view> names{kDetectKind};
    for (ServerKind kind : {ServerKind::Kvscope, ServerKind::LlamaCpp, ServerKind::Vllm})
        names.push_back(server_kind_name(kind));
    return names;
}

std::optional<bool> parse_kv_unified(std::string_view text) {
    if (text.empty() || text == "auto")
        return std::nullopt;
    if (text == "yes")
        return true;
    if (text == "no")
        return false;
    throw ConnectOptionsError("--kv-unified takes yes (the slots share one KV buffer: -kvu), no (each slot owns "
                              "its own) or auto (guess); got '" + std::string(text) + "'");
}

void validate(const ConnectOptions& options) {
    if (!is_host_port(options.url, "http://", true) && !is_host_port(options.url, "https://", true))
        throw ConnectOptionsError("'" + options.url + "' is not a server URL: expected http://HOST:PORT or "
                                  "https://HOST:PORT, e.g. http://127.0.0.1:8000");
    for (const std::vector<std::string>* list : {&options.kv_events, &options.kv_replay})
        for (const std::string& endpoint : *list) {
            if (endpoint.starts_with("tcp://*:"))
                throw ConnectOptionsError("'" + endpoint + "' is the address the server binds; give the host "
                                          "to connect to instead of '*', e.g. tcp://127.0.0.1:5557");
            if (!is_host_port(endpoint, "tcp://", false))
                throw ConnectOptionsError("'" + endpoint + "' is not a KV-events endpoint: expected "
                                          "tcp://HOST:PORT, e.g. tcp://127.0.0.1:5557");
        }
    if (options.kv_replay.size() > options.kv_events.size())
        throw ConnectOptionsError(std::to_string(options.kv_replay.size()) + " replay endpoints for " +
                                  std::to_string(options.kv_events.size()) +
                                  " KV-events endpoints: give one replay endpoint per rank, in rank order");
    if (!options.kv_events.empty() && options.kind && *options.kind != ServerKind::Vllm)
        throw ConnectOptionsError("KV-events endpoints are vLLM's; a " +
                                  std::string(server_kind_name(*options.kind)) + " server has none");
    if (!is_llama_cache_type(options.kv_dtype)) {
        std::string known;
        for (std::string_view name : llama_cache_types())
            known += (known.empty() ? "" : ", ") + std::string(name);
        throw ConnectOptionsError("'" + options.kv_dtype + "' is not a KV cache type llama.cpp has: " + known);
    }
    if (options.interval <= 0ms || options.timeout <= 0ms)
        throw ConnectOptionsError("the poll interval and the request timeout must be positive");
}

ConnectOptions parse_connect_options(const ConnectText& text) {
    ConnectOptions options;
    options.url = trimmed(text.url);
    while (options.url.ends_with('/'))
        options.url.pop_back();
    options.api_key = trimmed(text.api_key);
    if (const std::string kind = trimmed(text.kind); !kind.empty() && kind != kDetectKind) {
        options.kind = parse_server_kind(kind);
        if (!options.kind)
            throw ConnectOptionsError("unknown server kind '" + kind + "' (known: " + known_kinds() + ")");
    }
    options.kv_events = split_commas(text.kv_events);
    options.kv_replay = split_commas(text.kv_replay);
    options.kv_topic = trimmed(text.kv_topic);
    if (std::string dtype = trimmed(text.kv_dtype); !dtype.empty())
        options.kv_dtype = std::move(dtype);
    options.kv_unified = parse_kv_unified(trimmed(text.kv_unified));
    validate(options);
    return options;
}

} // namespace kvscope::attach
