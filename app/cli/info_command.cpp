// kvscope-cli info: what a GGUF file holds, and what its KV cache costs.
#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

#include "app/cli/commands.h"
#include "app/cli/model_options.h"
#include "engine/core/error.h"
#include "engine/engine_config.h"
#include "engine/kv/kv_layout.h"
#include "engine/model/gguf_file.h"
#include "engine/model/model_config.h"
#include "engine/model/tensor_stats.h"

namespace kvscope::cli {
namespace {

nlohmann::ordered_json info_json(const GgufFile& file, const ModelConfig& c, const TensorStats& stats) {
    nlohmann::ordered_json j{{"file", file.path()},
                             {"gguf_version", file.version()},
                             {"architecture", c.architecture},
                             {"name", c.name},
                             {"layers", c.n_layers},
                             {"embedding_dim", c.embedding_dim},
                             {"heads", c.n_heads},
                             {"kv_heads", c.n_kv_heads},
                             {"head_dim", c.head_dim},
                             {"ffn_dim", c.ffn_dim},
                             {"vocab_size", c.vocab_size},
                             {"context_length", c.context_length},
                             {"rope_theta", c.rope_theta},
                             {"rope_style", std::string(to_string(c.rope_style))},
                             {"rope_dims", c.rope_dims},
                             {"layer_kinds", c.layer_kinds()},
                             {"features", c.features()},
                             {"tied_embeddings", c.tied_embeddings},
                             {"tokenizer", file.get_string("tokenizer.ggml.model").value_or("")},
                             {"parameters", stats.parameters},
                             {"active_parameters", stats.active_parameters(c.experts.count, c.experts.used)},
                             {"tensor_bytes", stats.bytes}};
    if (c.is_moe())
        j["experts"] = {{"count", c.experts.count},
                        {"used", c.experts.used},
                        {"ffn_dim", c.experts.ffn_dim},
                        {"parameters", stats.expert_parameters}};
    for (const LayerAttention& a : c.layers)
        j["layer_attention"].push_back({{"window", a.window}, {"rope", a.rope}, {"rope_theta", a.rope_theta},
                                        {"rope_scaled", a.rope_scaled}});
    for (const TensorTypeStats& t : stats.by_type)
        j["tensor_types"][std::string(to_string(t.type))] = {
            {"tensors", t.tensors}, {"parameters", t.parameters}, {"bytes", t.bytes}};
    for (KvDtype d : all_kv_dtypes())
        j["kv_bytes_per_token"][std::string(to_string(d))] =
            KvLayout(c.kv_geometry(), d, 16).bytes_per_token();
    // The engine's KV cache groups (its defaults: f16, block 16, a 512-token
    // chunk) and what a sequence at the file's context holds in them.
    const EngineConfig engine;
    const KvLayout layout = engine_kv_layout(engine, c);
    j["kv_cache_groups"] = {{"groups", layout.num_groups()},
                            {"layers_per_block", layout.layers_per_block()},
                            {"kinds", nlohmann::ordered_json::array()},
                            {"f16_bytes_at_context", layout.bytes_for_sequence(c.context_length, engine.max_num_batched_tokens)},
                            {"f16_bytes_at_context_swa_full", layout.bytes_for_tokens(c.context_length)}};
    for (const KvKind& kind : layout.groups().kinds())
        j["kv_cache_groups"]["kinds"].push_back(
            {{"title", kind.title()}, {"window", kind.window}, {"groups", kind.groups.size()}});
    return j;
}

void print_text(const nlohmann::ordered_json& j) {
    std::printf("%s\n", j["file"].get<std::string>().c_str());
    std::printf("  %s '%s', GGUF v%u\n", j["architecture"].get<std::string>().c_str(),
                j["name"].get<std::string>().c_str(), j["gguf_version"].get<unsigned>());
    std::printf("  %u layers, dim %u, %u heads (%u KV) x %u, FFN %u, vocab %u, context %u\n",
                j["layers"].get<unsigned>(), j["embedding_dim"].get<unsigned>(), j["heads"].get<unsigned>(),
                j["kv_heads"].get<unsigned>(), j["head_dim"].get<unsigned>(), j["ffn_dim"].get<unsigned>(),
                j["vocab_size"].get<unsigned>(), j["context_length"].get<unsigned>());
    std::printf("  %s; beyond llama: %s\n", j["layer_kinds"].get<std::string>().c_str(),
                j["features"].get<std::string>().c_str());
    std::printf("  RoPE theta %g (%s)%s; tokenizer %s\n", j["rope_theta"].get<double>(),
                j["rope_style"].get<std::string>().c_str(),
                j["tied_embeddings"].get<bool>() ? ", tied embeddings" : "", j["tokenizer"].get<std::string>().c_str());
    std::printf("  %llu parameters in %llu bytes\n", j["parameters"].get<unsigned long long>(),
                j["tensor_bytes"].get<unsigned long long>());
    if (j.contains("experts"))
        std::printf("  %u experts of FFN %u, %u per token: %llu parameters active per token\n",
                    j["experts"]["count"].get<unsigned>(), j["experts"]["ffn_dim"].get<unsigned>(),
                    j["experts"]["used"].get<unsigned>(), j["active_parameters"].get<unsigned long long>());
    std::printf("\n  %-8s %8s %14s %14s\n", "type", "tensors", "parameters", "bytes");
    for (const auto& [type, t] : j["tensor_types"].items())
        std::printf("  %-8s %8llu %14llu %14llu\n", type.c_str(), t["tensors"].get<unsigned long long>(),
                    t["parameters"].get<unsigned long long>(), t["bytes"].get<unsigned long long>());
    std::printf("\n  KV bytes per token:");
    for (const auto& [dtype, bytes] : j["kv_bytes_per_token"].items())
        std::printf(" %s %llu", dtype.c_str(), bytes.get<unsigned long long>());
    std::printf("\n");
    const auto& groups = j["kv_cache_groups"];
    std::printf("  KV cache groups: %llu of %u layers (", groups["groups"].get<unsigned long long>(),
                groups["layers_per_block"].get<unsigned>());
    const char* separator = "";
    for (const auto& kind : groups["kinds"]) {
        std::printf("%s%s: %llu", separator, kind["title"].get<std::string>().c_str(),
                    kind["groups"].get<unsigned long long>());
        separator = "; ";
    }
    std::printf(")\n  a %u-token sequence in f16: %.1f MiB", j["context_length"].get<unsigned>(),
                groups["f16_bytes_at_context"].get<double>() / (1 << 20));
    if (groups["f16_bytes_at_context"] != groups["f16_bytes_at_context_swa_full"])
        std::printf(", %.1f MiB with --swa-full", groups["f16_bytes_at_context_swa_full"].get<double>() / (1 << 20));
    std::printf("\n");
}

} // namespace

int run_info(Args& args) {
    const auto path = args.subcommand();
    const bool json = args.flag("--json");
    args.finish();
    if (!path)
        throw Error("info needs a file: kvscope-cli info FILE.gguf");
    const GgufFile file(resolve_model_path(*path));
    const ModelConfig config = read_model_config(file);
    const auto j = info_json(file, config, tensor_stats(file));
    if (json)
        std::printf("%s\n", j.dump(2).c_str());
    else
        print_text(j);
    return 0;
}

} // namespace kvscope::cli
