#include "engine/engine_config.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <set>

#include <nlohmann/json.hpp>

#include "engine/core/error.h"

namespace kvscope {
namespace {

constexpr double kMiB = 1024.0 * 1024.0;

// Bytes a pool needs beside its blocks (see kv_pool_blocks).
double outside_blocks(const EngineConfig& c, const KvLayout& layout) {
    return static_cast<double>(layout.fixed_bytes()) +
           static_cast<double>(c.max_num_seqs) * static_cast<double>(layout.tail_bytes());
}

} // namespace

KvLayout engine_kv_layout(const EngineConfig& c, const ModelConfig& m) {
    return KvLayout(m.kv_geometry(), c.kv_dtype, c.block_size, KvGroups::from_windows(m.layer_windows(), c.swa_full));
}

double suggested_kv_budget_mib(const EngineConfig& c, const KvLayout& layout, std::uint32_t context) {
    const double block = static_cast<double>(layout.bytes_per_block());
    const double outside = outside_blocks(c, layout);
    const double one_context =
        static_cast<double>(layout.sequence_blocks(std::max<std::uint32_t>(context, 1), c.max_num_batched_tokens));
    const double wanted = static_cast<double>(c.max_num_seqs) * one_context;
    const double capped = std::floor((kDefaultKvBudgetMib * kMiB - outside) / block);
    const double blocks = std::max(one_context, std::min(wanted, capped));
    return std::ceil((blocks * block + outside) / kMiB);
}

std::uint32_t kv_pool_blocks(const EngineConfig& c, const KvLayout& layout, std::uint32_t context) {
    if (c.num_blocks > 0)
        return c.num_blocks;
    const double budget_mib = c.kv_budget_mib > 0 ? c.kv_budget_mib : suggested_kv_budget_mib(c, layout, context);
    const double budget = budget_mib * kMiB - outside_blocks(c, layout);
    const auto blocks =
        budget > 0 ? static_cast<std::uint32_t>(budget / static_cast<double>(layout.bytes_per_block())) : 0u;
    if (blocks == 0)
        throw Error("a KV budget of " + std::to_string(budget_mib) + " MiB holds no block of " +
                    std::to_string(layout.bytes_per_block()) + " bytes (" + std::to_string(layout.block_size()) +
                    " tokens of this model)");
    return blocks;
}

double kv_pool_bytes(const EngineConfig& c, const KvLayout& layout, std::uint32_t blocks) {
    return static_cast<double>(blocks) * static_cast<double>(layout.bytes_per_block()) + outside_blocks(c, layout);
}

nlohmann::ordered_json to_json(const EngineConfig& c) {
    return nlohmann::ordered_json{{"model", c.model},
                                  {"backend", std::string(to_string(c.backend))},
                                  {"threads", c.threads},
                                  {"kv_dtype", std::string(to_string(c.kv_dtype))},
                                  {"block_size", c.block_size},
                                  {"num_blocks", c.num_blocks},
                                  {"kv_budget_mib", c.kv_budget_mib},
                                  {"allocation", std::string(to_string(c.allocation))},
                                  {"preemption", std::string(to_string(c.preemption))},
                                  {"prefix_caching", c.prefix_caching},
                                  {"swa_full", c.swa_full},
                                  {"max_num_seqs", c.max_num_seqs},
                                  {"max_num_batched_tokens", c.max_num_batched_tokens},
                                  {"swap_blocks", c.swap_blocks},
                                  {"watermark", c.watermark},
                                  {"scheduling_policy", std::string(to_string(c.scheduling_policy))}};
}

namespace {

template <typename T>
void read(const nlohmann::ordered_json& j, const char* key, T& out) {
    if (!j.contains(key))
        return;
    try {
        out = j.at(key).get<T>();
    } catch (const nlohmann::json::exception&) {
        throw Error(std::string("engine config: '") + key + "' has the wrong type (" + j.at(key).dump() + ")");
    }
}

std::string read_word(const nlohmann::ordered_json& j, const char* key, std::string fallback) {
    read(j, key, fallback);
    return fallback;
}

} // namespace

EngineConfig engine_config_from_json(const nlohmann::ordered_json& j) {
    if (!j.is_object())
        throw Error("engine config: expected a JSON object");
    const EngineConfig defaults;
    const nlohmann::ordered_json known = to_json(defaults);
    for (const auto& [key, value] : j.items())
        if (!known.contains(key))
            throw Error("engine config: unknown key '" + key + "'");
    EngineConfig c;
    read(j, "model", c.model);
    c.backend = parse_backend(read_word(j, "backend", std::string(to_string(c.backend))));
    read(j, "threads", c.threads);
    c.kv_dtype = parse_kv_dtype(read_word(j, "kv_dtype", std::string(to_string(c.kv_dtype))));
    read(j, "block_size", c.block_size);
    read(j, "num_blocks", c.num_blocks);
    read(j, "kv_budget_mib", c.kv_budget_mib);
    c.allocation = parse_allocation_mode(read_word(j, "allocation", std::string(to_string(c.allocation))));
    c.preemption = parse_preemption_mode(read_word(j, "preemption", std::string(to_string(c.preemption))));
    read(j, "prefix_caching", c.prefix_caching);
    read(j, "swa_full", c.swa_full);
    read(j, "max_num_seqs", c.max_num_seqs);
    read(j, "max_num_batched_tokens", c.max_num_batched_tokens);
    read(j, "swap_blocks", c.swap_blocks);
    read(j, "watermark", c.watermark);
    c.scheduling_policy =
        parse_scheduling_policy(read_word(j, "scheduling_policy", std::string(to_string(c.scheduling_policy))));
    return c;
}

EngineConfig load_engine_config(const std::string& path) {
    std::ifstream in(path);
    if (!in)
        throw Error("cannot open engine config " + path);
    try {
        return engine_config_from_json(nlohmann::ordered_json::parse(in));
    } catch (const nlohmann::ordered_json::parse_error& e) {
        throw Error(path + ": not valid JSON (" + e.what() + ")");
    }
}

void save_engine_config(const EngineConfig& config, const std::string& path) {
    std::ofstream out(path);
    out << to_json(config).dump(2) << "\n";
    if (!out)
        throw Error("cannot write engine config " + path);
}

} // namespace kvscope
