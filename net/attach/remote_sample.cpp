#include "net/attach/remote_sample.h"

namespace kvscope::attach {

std::string_view server_kind_name(ServerKind kind) {
    switch (kind) {
    case ServerKind::Kvscope: return "kvscope";
    case ServerKind::LlamaCpp: return "llama.cpp";
    case ServerKind::Vllm: return "vllm";
    }
    return "?";
}

std::optional<ServerKind> parse_server_kind(std::string_view name) {
    for (ServerKind kind : {ServerKind::Kvscope, ServerKind::LlamaCpp, ServerKind::Vllm})
        if (name == server_kind_name(kind))
            return kind;
    if (name == "llamacpp" || name == "llama-server")
        return ServerKind::LlamaCpp;
    return std::nullopt;
}

std::string_view link_state_name(LinkState state) {
    switch (state) {
    case LinkState::Connecting: return "connecting";
    case LinkState::Live: return "live";
    case LinkState::Reconnecting: return "reconnecting";
    }
    return "?";
}

std::vector<std::string> server_cannot_tell(const RemoteSample& sample) {
    std::vector<std::string> unknown;
    switch (sample.kind) {
    case ServerKind::Kvscope:
        break; // its snapshot is the engine's own
    case ServerKind::LlamaCpp:
        unknown.emplace_back("No block map: llama.cpp reserves one contiguous context per slot and "
                             "reports tokens per slot, not blocks.");
        unknown.emplace_back("No KV cache type: the server does not report it; bytes assume the type "
                             "given when connecting (" + sample.total.kv_dtype.value_or("f16") + ").");
        unknown.emplace_back("Whether the slots share one KV buffer (-kvu) is not reported: the KV capacity "
                             "takes --kv-unified's answer, or guesses shared for 4 slots (-np auto) and "
                             "separate otherwise.");
        if (!sample.total.kv_bytes_per_token)
            unknown.emplace_back("No KV bytes: the model file named by /props is not readable here, "
                                 "so its layers and heads are unknown.");
        if (!sample.total.preemptions)
            unknown.emplace_back("No preemptions: llama.cpp does not preempt or count them.");
        if (!sample.llama_kv_caches.empty())
            unknown.emplace_back("No size of the sliding-window cache: llama.cpp sizes it by -ub and "
                                 "--swa-full, which it does not report (nor the window: that comes from "
                                 "the model file).");
        break;
    case ServerKind::Vllm:
        unknown.emplace_back("No block map: vLLM reports block usage as a fraction, and its KV events "
                             "name cached blocks by hash, never by physical block id.");
        if (sample.ranks.empty() || !sample.ranks.front().prefix_cache)
            unknown.emplace_back("No prefix-cache map: connect with the KV-events endpoints "
                                 "(--kv-events-config on the server) to see it.");
        break;
    }
    return unknown;
}

} // namespace kvscope::attach
