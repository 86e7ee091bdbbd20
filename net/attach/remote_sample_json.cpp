#include "net/attach/remote_sample_json.h"

namespace kvscope::attach {
namespace {

using Json = nlohmann::ordered_json;

template <typename T>
Json or_null(const std::optional<T>& value) {
    return value ? Json(*value) : Json(nullptr);
}

Json to_json(const LatencyQuantiles& q) { return {{"p50", or_null(q.p50_ms)}, {"p99", or_null(q.p99_ms)}}; }

Json to_json(const SlotSample& slot) {
    return {{"id", slot.id},
            {"n_ctx", slot.n_ctx},
            {"tokens", slot.tokens},
            {"busy", slot.busy},
            {"prompt_tokens", or_null(slot.prompt_tokens)},
            {"decoded", or_null(slot.decoded)},
            {"reserved_free", slot.reserved_free()}};
}

Json to_json(const PrefixCacheGroupSample& g) {
    return {{"group", g.group},
            {"kind", or_null(g.kind)},
            {"sliding_window", or_null(g.sliding_window)},
            {"blocks", g.blocks},
            {"chains", g.chains},
            {"longest_chain", g.longest_chain}};
}

Json to_json(const LlamaKvCache& c) {
    return {{"window", c.window}, {"n_layers", c.n_layers}, {"bytes_per_token", or_null(c.bytes_per_token)}};
}

Json to_json(const RankSample& rank) {
    return {{"rank", rank.rank},
            {"figures", to_json(rank.figures)},
            {"kv_events_endpoint", or_null(rank.kv_events_endpoint)},
            {"prefix_cache", rank.prefix_cache ? to_json(*rank.prefix_cache) : Json(nullptr)}};
}

template <typename T>
Json array_of(const std::vector<T>& items) {
    Json list = Json::array();
    for (const T& item : items)
        list.push_back(to_json(item));
    return list;
}

} // namespace

Json to_json(const ServerFigures& f) {
    return {{"kv_blocks_total", or_null(f.kv_blocks_total)},
            {"kv_blocks_used", or_null(f.kv_blocks_used)},
            {"kv_tokens_capacity", or_null(f.kv_tokens_capacity)},
            {"kv_tokens_used", or_null(f.kv_tokens_used)},
            {"kv_usage", or_null(f.kv_usage)},
            {"block_size", or_null(f.block_size)},
            {"kv_dtype", or_null(f.kv_dtype)},
            {"kv_bytes_per_token", or_null(f.kv_bytes_per_token)},
            {"running", or_null(f.running)},
            {"waiting", or_null(f.waiting)},
            {"preemptions", or_null(f.preemptions)},
            {"requests_completed", or_null(f.requests_completed)},
            {"requests_aborted", or_null(f.requests_aborted)},
            {"requests_failed", or_null(f.requests_failed)},
            {"prompt_tokens_per_s", or_null(f.prompt_tokens_per_s)},
            {"generation_tokens_per_s", or_null(f.generation_tokens_per_s)},
            {"prefix_hit_rate", or_null(f.prefix_hit_rate)},
            {"ttft_ms", to_json(f.ttft)},
            {"itl_ms", to_json(f.itl)}};
}

Json to_json(const PrefixCacheSample& p) {
    return {{"blocks", p.blocks},
            {"chains", p.chains},
            {"longest_chain", p.longest_chain},
            {"stored", p.stored},
            {"removed", p.removed},
            {"cleared", p.cleared},
            {"batches", p.batches},
            {"replayed", p.replayed},
            {"lost", p.lost},
            {"last_seq", or_null(p.last_seq)},
            {"age_s", or_null(p.age_s)},
            {"chain_lengths", p.chain_lengths},
            {"groups", array_of(p.groups)}};
}

Json to_json(const RemoteSample& s) {
    // Before the first answer the kind may not be known yet (remote_monitor.h).
    const Json kind = s.link == LinkState::Connecting ? Json(nullptr) : Json(server_kind_name(s.kind));
    return {{"kind", kind},
            {"url", s.url},
            {"model", or_null(s.model)},
            {"time_s", s.time_s},
            {"link", link_state_name(s.link)},
            {"data_age_s", or_null(s.data_age_s)},
            {"reconnects", s.reconnects},
            {"failed_polls", s.failed_polls},
            {"retry_in_s", or_null(s.retry_in_s)},
            {"faults", s.faults},
            {"total", to_json(s.total)},
            {"slots", array_of(s.slot_samples)},
            {"llama_kv_caches", array_of(s.llama_kv_caches)},
            {"ranks", array_of(s.ranks)},
            {"engine_step", s.engine ? Json(s.engine->step) : Json(nullptr)},
            {"cannot_tell", server_cannot_tell(s)}};
}

} // namespace kvscope::attach
