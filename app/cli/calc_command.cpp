// kvscope-cli calc: the KV cache memory calculator.
#include <cstdio>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "app/cli/commands.h"
#include "app/cli/weight_formats.h"
#include "engine/core/error.h"
#include "engine/kv/kv_memory_calc.h"
#include "engine/presets/device_presets.h"
#include "engine/presets/model_presets.h"

namespace kvscope::cli {
namespace {

std::string bytes_text(double bytes) {
    const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;
    while (bytes >= 1024.0 && u < 4) {
        bytes /= 1024.0;
        ++u;
    }
    char text[32];
    std::snprintf(text, sizeof text, u == 0 ? "%.0f %s" : "%.2f %s", bytes, units[u]);
    return text;
}

struct Device {
    std::string name;
    std::uint64_t bytes = 0;
};

// The model's shape: a preset, or explicit --layers/--kv-heads/--head-dim.
ModelGeometry read_geometry(Args& args) {
    if (const auto preset = args.value("--preset"))
        return find_model_preset(*preset);
    ModelGeometry g;
    g.name = "custom";
    g.n_layers = static_cast<std::uint32_t>(args.int_or("--layers", 0, 0, 1024));
    g.n_kv_heads = static_cast<std::uint32_t>(args.int_or("--kv-heads", 0, 0, 1024));
    const auto head_dim = static_cast<std::uint32_t>(args.int_or("--head-dim", 0, 0, 4096));
    if (g.n_layers == 0 || g.n_kv_heads == 0 || head_dim == 0)
        throw Error("calc needs --preset NAME, or --layers, --kv-heads and --head-dim (calc --list shows presets)");
    g.n_heads = g.n_kv_heads;
    g.dim = g.n_heads * head_dim;
    return g;
}

std::optional<Device> read_device(Args& args) {
    if (const auto name = args.value("--gpu")) {
        const DevicePreset& d = find_device_preset(*name);
        return Device{d.name, d.memory_bytes};
    }
    const double gib = args.number_or("--gpu-mem-gib", 0, 0, 1 << 20);
    if (gib > 0)
        return Device{"custom", static_cast<std::uint64_t>(gib * 1024 * 1024 * 1024)};
    return std::nullopt;
}

nlohmann::json answer_json(const KvMemoryAnswer& a) {
    nlohmann::json j{{"bytes_per_token", a.bytes_per_token},
                     {"bytes_per_block", a.bytes_per_block},
                     {"bytes_per_sequence", a.bytes_per_sequence},
                     {"fixed_bytes", a.fixed_bytes},
                     {"total_bytes", a.total_bytes}};
    if (a.sequences_that_fit) {
        j["sequences_that_fit"] = *a.sequences_that_fit;
        j["kv_budget_bytes"] = *a.kv_budget_bytes;
    }
    return j;
}

void print_json(const ModelGeometry& g, const KvMemoryQuestion& q, KvDtype dtype, const std::optional<Device>& device,
                const std::string& weights, const std::vector<KvMemoryAnswer>& answers) {
    nlohmann::json j{{"model", {{"name", g.name}, {"layers", g.n_layers}, {"kv_heads", g.n_kv_heads},
                                {"head_dim", g.head_dim()}, {"parameters", g.name == "custom" ? 0 : g.parameters()}}},
                     {"tokens", q.tokens_per_sequence},
                     {"sequences", q.sequences},
                     {"block_size", q.block_size},
                     {"kv_dtype", std::string(to_string(dtype))}};
    for (const KvMemoryAnswer& a : answers) {
        if (a.dtype == dtype)
            j.update(answer_json(a));
        j["by_dtype"][std::string(to_string(a.dtype))] = answer_json(a);
    }
    if (device)
        j["gpu"] = {{"name", device->name}, {"memory_bytes", device->bytes}, {"memory_fraction", q.memory_fraction},
                    {"weights", weights}, {"weight_bytes", q.weight_bytes}};
    std::printf("%s\n", j.dump(2).c_str());
}

void print_table(const ModelGeometry& g, const KvMemoryQuestion& q, KvDtype dtype, const std::optional<Device>& device,
                 const std::string& weights, const std::vector<KvMemoryAnswer>& answers) {
    std::printf("KV cache of %s: %u layers x %u KV heads x head_dim %u, block size %u\n", g.name.c_str(), g.n_layers,
                g.n_kv_heads, g.head_dim(), q.block_size);
    std::printf("%llu tokens per sequence x %llu sequences\n", static_cast<unsigned long long>(q.tokens_per_sequence),
                static_cast<unsigned long long>(q.sequences));
    if (device)
        std::printf("on %s (%s, %.0f%% usable) next to %s of %s weights (%.2fB parameters)\n", device->name.c_str(),
                    bytes_text(static_cast<double>(device->bytes)).c_str(), q.memory_fraction * 100,
                    bytes_text(static_cast<double>(q.weight_bytes)).c_str(), weights.c_str(),
                    static_cast<double>(g.parameters()) / 1e9);
    std::printf("\n%-10s %12s %14s %14s %8s%s\n", "kv dtype", "per token", "per sequence", "total", "vs f16",
                device ? "   sequences that fit" : "");
    const double f16_token = static_cast<double>(answer_kv_memory(q, KvDtype::F16).bytes_per_token);
    for (const KvMemoryAnswer& a : answers) {
        std::printf("%-10s %12s %14s %14s %7.2fx", std::string(to_string(a.dtype)).c_str(),
                    bytes_text(static_cast<double>(a.bytes_per_token)).c_str(),
                    bytes_text(static_cast<double>(a.bytes_per_sequence)).c_str(),
                    bytes_text(static_cast<double>(a.total_bytes)).c_str(),
                    f16_token / static_cast<double>(a.bytes_per_token));
        if (a.sequences_that_fit)
            std::printf(" %21llu", static_cast<unsigned long long>(*a.sequences_that_fit));
        std::printf("%s\n", a.dtype == dtype ? "   <" : "");
    }
}

void print_presets() {
    std::printf("model presets:\n");
    for (const ModelGeometry& m : model_presets())
        std::printf("  %-16s %2u layers, %2u heads, %2u KV heads, head_dim %3u, context %6u, %.2fB parameters\n",
                    m.name.c_str(), m.n_layers, m.n_heads, m.n_kv_heads, m.head_dim(), m.context,
                    static_cast<double>(m.parameters()) / 1e9);
    std::printf("GPU presets:\n");
    for (const DevicePreset& d : device_presets())
        std::printf("  %-16s %s, %s\n", d.name.c_str(), d.description.c_str(),
                    bytes_text(static_cast<double>(d.memory_bytes)).c_str());
    std::printf("weight types: %s\n", weight_format_names().c_str());
}

} // namespace

int run_calc(Args& args) {
    if (args.flag("--list")) {
        args.finish();
        print_presets();
        return 0;
    }
    const ModelGeometry geometry = read_geometry(args);
    KvMemoryQuestion q;
    q.geometry = geometry.kv();
    q.tokens_per_sequence = static_cast<std::uint64_t>(
        args.int_or("--tokens", geometry.context ? geometry.context : 4096, 1, std::int64_t{1} << 32));
    q.sequences = static_cast<std::uint64_t>(args.int_or("--seqs", 1, 1, 1 << 20));
    q.block_size = static_cast<std::uint32_t>(args.int_or("--block-size", 16, 1, 1024));
    const KvDtype dtype = parse_kv_dtype(args.value_or("--kv-dtype", "f16"));
    const std::optional<Device> device = read_device(args);
    const std::string weights = args.value_or("--weights", "f16");
    q.memory_fraction = args.number_or("--gpu-util", 0.9, 0.01, 1.0);
    const bool json = args.flag("--json");
    args.finish();
    if (device) {
        if (geometry.name == "custom")
            throw Error("--gpu needs --preset: the weights' size comes from the model's shape");
        q.device_bytes = device->bytes;
        q.weight_bytes = weight_bytes(geometry.parameters(), weights);
    }
    const std::vector<KvMemoryAnswer> answers = answer_kv_memory_all_dtypes(q);
    if (json)
        print_json(geometry, q, dtype, device, weights, answers);
    else
        print_table(geometry, q, dtype, device, weights, answers);
    return 0;
}

} // namespace kvscope::cli
