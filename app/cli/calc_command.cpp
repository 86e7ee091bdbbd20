// kvscope-cli calc: the KV cache memory calculator.
#include <cstdio>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "app/cli/commands.h"
#include "engine/core/error.h"
#include "engine/presets/device_presets.h"
#include "engine/presets/kv_calculator.h"
#include "engine/core/byte_text.h"
#include "engine/presets/model_presets.h"

namespace kvscope::cli {
namespace {

std::string count_text(double n) {
    const char* units[] = {"", "K", "M", "B"};
    int u = 0;
    while (n >= 1000.0 && u < 3) {
        n /= 1000.0;
        ++u;
    }
    char text[32];
    std::snprintf(text, sizeof text, u == 0 ? "%.0f" : "%.2f%s", n, units[u]);
    return text;
}

CalcModel read_model(Args& args) {
    if (const auto path = args.value("--model"))
        return calc_model_from_file(*path);
    if (const auto preset = args.value("--preset"))
        return calc_model(find_model_preset(*preset));
    CalcModel m{"custom", {}, 0, std::nullopt, 4096};
    m.kv.n_layers = static_cast<std::uint32_t>(args.int_or("--layers", 0, 0, 1024));
    m.kv.n_kv_heads = static_cast<std::uint32_t>(args.int_or("--kv-heads", 0, 0, 1024));
    m.kv.head_dim = static_cast<std::uint32_t>(args.int_or("--head-dim", 0, 0, 4096));
    if (m.kv.n_layers == 0 || m.kv.n_kv_heads == 0 || m.kv.head_dim == 0)
        throw Error("calc needs --preset NAME, --model FILE.gguf, or --layers, --kv-heads and --head-dim "
                    "(calc --list shows presets)");
    return m;
}

std::optional<CalcDevice> read_device(Args& args) {
    if (const auto name = args.value("--gpu")) {
        const DevicePreset& d = find_device_preset(*name);
        return CalcDevice{d.name, d.memory_bytes};
    }
    const double gib = args.number_or("--gpu-mem-gib", 0, 0, 1 << 20);
    if (gib > 0)
        return CalcDevice{"custom", static_cast<std::uint64_t>(gib * 1024 * 1024 * 1024)};
    return std::nullopt;
}

nlohmann::ordered_json answer_json(const KvMemoryAnswer& a) {
    nlohmann::ordered_json j{{"bytes_per_token", a.bytes_per_token},
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

void print_json(const CalcModel& m, const KvMemoryQuestion& q, KvDtype dtype, const std::optional<CalcDevice>& device,
                const std::string& weights, const std::vector<KvMemoryAnswer>& answers) {
    nlohmann::ordered_json j{{"model", {{"name", m.name}, {"layers", m.kv.n_layers}, {"kv_heads", m.kv.n_kv_heads},
                                {"head_dim", m.kv.head_dim}, {"parameters", m.parameters}}},
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
        j["gpu"] = {{"name", device->name}, {"memory_bytes", device->memory_bytes}, {"memory_fraction", q.memory_fraction},
                    {"weights", weights}, {"weight_bytes", q.weight_bytes}};
    std::printf("%s\n", j.dump(2).c_str());
}

void print_table(const CalcModel& m, const KvMemoryQuestion& q, KvDtype dtype, const std::optional<CalcDevice>& device,
                 const std::string& weights, const std::vector<KvMemoryAnswer>& answers) {
    std::printf("KV cache of %s: %u layers x %u KV heads x head_dim %u, block size %u\n", m.name.c_str(),
                m.kv.n_layers, m.kv.n_kv_heads, m.kv.head_dim, q.block_size);
    std::printf("%llu tokens per sequence x %llu sequences\n", static_cast<unsigned long long>(q.tokens_per_sequence),
                static_cast<unsigned long long>(q.sequences));
    if (device)
        std::printf("on %s (%s, %.0f%% usable) next to %s of weights (%s, %s parameters)\n", device->name.c_str(),
                    bytes_text(static_cast<double>(device->memory_bytes)).c_str(), q.memory_fraction * 100,
                    bytes_text(static_cast<double>(q.weight_bytes)).c_str(), weights.c_str(),
                    count_text(static_cast<double>(m.parameters)).c_str());
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

// Which layers see only a window and which run without RoPE, for calc
// --list: "window 512 on 15 of 18 layers (5 window : 1 global)". Empty for
// a model whose layers are all alike.
std::string layer_kinds_text(const ModelGeometry& m) {
    std::uint32_t windowed = 0, without_rope = 0;
    for (std::uint32_t l = 0; l < m.n_layers; ++l) {
        windowed += m.is_window_layer(l) ? 1 : 0;
        without_rope += m.uses_rope(l) ? 0 : 1;
    }
    std::string text;
    if (windowed == m.n_layers)
        text = "window " + std::to_string(m.sliding_window) + " on every layer";
    else if (windowed > 0)
        text = "window " + std::to_string(m.sliding_window) + " on " + std::to_string(windowed) + " of " +
               std::to_string(m.n_layers) + " layers (" + std::to_string(m.swa_period - 1) + " window : 1 global)";
    if (without_rope > 0)
        text += (text.empty() ? "" : "; ") + std::string("no RoPE on ") + std::to_string(without_rope) + " of " +
                std::to_string(m.n_layers) + " layers (every " + std::to_string(m.no_rope_period) + "th)";
    return text;
}

void print_presets() {
    std::printf("model presets:\n");
    for (const ModelGeometry& m : model_presets()) {
        std::printf("  %-16s %-8s %2u layers, %2u heads, %2u KV heads, head_dim %3u, context %6u, %.2fB parameters",
                    m.name.c_str(), m.architecture.c_str(), m.n_layers, m.n_heads, m.n_kv_heads, m.head_dim(),
                    m.context, static_cast<double>(m.parameters()) / 1e9);
        const std::string kinds = layer_kinds_text(m);
        std::printf("%s%s\n", kinds.empty() ? "" : "; ", kinds.c_str());
    }
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
    CalcInputs in;
    in.model = read_model(args);
    in.tokens_per_sequence = static_cast<std::uint64_t>(
        args.int_or("--tokens", static_cast<std::int64_t>(in.model.context), 1, std::int64_t{1} << 32));
    in.sequences = static_cast<std::uint64_t>(args.int_or("--seqs", 1, 1, 1 << 20));
    in.block_size = static_cast<std::uint32_t>(args.int_or("--block-size", 16, 1, 1024));
    const KvDtype dtype = parse_kv_dtype(args.value_or("--kv-dtype", "f16"));
    in.device = read_device(args);
    in.weights = args.value("--weights");
    in.memory_fraction = args.number_or("--gpu-util", 0.9, 0.01, 1.0);
    const bool json = args.flag("--json");
    args.finish();
    if (in.device && in.model.parameters == 0)
        throw Error("--gpu needs --preset or --model: the weights' size comes from the model");
    const CalcResult r = run_kv_calculator(in);
    if (json)
        print_json(in.model, r.question, dtype, in.device, r.weights, r.answers);
    else
        print_table(in.model, r.question, dtype, in.device, r.weights, r.answers);
    return 0;
}

} // namespace kvscope::cli
