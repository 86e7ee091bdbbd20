#include "engine/engine_config.h"

#include <fstream>
#include <set>

#include <nlohmann/json.hpp>

#include "engine/core/error.h"

namespace kvscope {

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
