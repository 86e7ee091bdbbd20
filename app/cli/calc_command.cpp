// kvscope-cli calc: the KV cache memory calculator.
#include <algorithm>
#include <cstdio>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "app/cli/commands.h"
#include "app/cli/model_options.h"
#include "engine/core/error.h"
#include "engine/core/byte_text.h"
#include "engine/presets/calc_presets.h"
#include "engine/presets/device_presets.h"
#include "engine/presets/kv_calculator.h"

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
    if (const auto path = optional_model_path(args))
        return calc_model_from_file(*path);
    if (const auto preset = args.value("--preset"))
        return find_calc_preset(*preset).model;
    CalcModel m{.name = "custom", .context = 4096};
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

nlohmann::ordered_json kind_json(const KvKindAnswer& k) {
    return {{"kind", k.title},
            {"window", k.window},
            {"layers", k.n_layers},
            {"layer_slots", k.layer_slots},
            {"bytes_per_token", k.bytes_per_token},
            {"blocks_per_sequence", k.blocks_per_sequence},
            {"bytes_per_sequence", k.bytes_per_sequence}};
}

nlohmann::ordered_json answer_json(const KvMemoryAnswer& a) {
    nlohmann::ordered_json j{{"bytes_per_token", a.bytes_per_token},
                     {"bytes_per_block", a.bytes_per_block},
                     {"bytes_per_sequence", a.bytes_per_sequence},
                     {"fixed_bytes", a.fixed_bytes},
                     {"total_bytes", a.total_bytes},
                     {"whole_bytes_per_sequence", a.whole_bytes_per_sequence},
                     {"layers_per_block", a.layers_per_block},
                     {"groups", a.groups},
                     {"kinds", nlohmann::ordered_json::array()}};
    for (const KvKindAnswer& k : a.kinds)
        j["kinds"].push_back(kind_json(k));
    if (a.sequences_that_fit) {
        j["sequences_that_fit"] = *a.sequences_that_fit;
        j["whole_sequences_that_fit"] = *a.whole_sequences_that_fit;
        j["kv_budget_bytes"] = *a.kv_budget_bytes;
    }
    return j;
}

nlohmann::ordered_json model_json(const CalcModel& m) {
    nlohmann::ordered_json j{{"name", m.name}, {"layers", m.kv.n_layers}};
    if (m.latent)
        j["latent"] = {{"latent_dim", m.latent->latent_dim}, {"rope_dim", m.latent->rope_dim}};
    else
        j.update({{"kv_heads", m.kv.n_kv_heads}, {"head_dim", m.kv.head_dim}});
    j.update({{"heads", m.n_heads}, {"parameters", m.parameters}, {"layer_windows", m.layer_windows}});
    return j;
}

void print_json(const CalcModel& m, const KvMemoryQuestion& q, KvDtype dtype, const std::optional<CalcDevice>& device,
                const std::string& weights, const std::vector<KvMemoryAnswer>& answers) {
    nlohmann::ordered_json j{{"model", model_json(m)},
                     {"tokens", q.tokens_per_sequence},
                     {"sequences", q.sequences},
                     {"block_size", q.block_size},
                     {"chunk_tokens", q.chunk_tokens},
                     {"swa_full", q.keep_whole},
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

std::string shape_text(const CalcModel& m) {
    const std::string layers = std::to_string(m.kv.n_layers) + " layers";
    if (m.latent)
        return layers + " x latent " + std::to_string(m.latent->latent_dim) + " + " +
               std::to_string(m.latent->rope_dim) + " (MLA: one row per token and layer, shared by " +
               std::to_string(m.n_heads) + " heads)";
    return layers + " x " + std::to_string(m.kv.n_kv_heads) + " KV heads x head_dim " + std::to_string(m.kv.head_dim);
}

bool frees_windows(const KvMemoryQuestion& q) { return !q.layer_windows.empty() && !q.keep_whole; }

// The highlighted dtype's bytes by kind of layer, the groups' padding, and
// what the same sequence costs with every layer kept whole.
void print_kinds(const KvMemoryQuestion& q, const KvMemoryAnswer& a) {
    const std::string head = "by kind of layer (" + std::string(to_string(a.dtype)) + ")";
    std::printf("\n%-34s %12s %8s %14s\n", head.c_str(), "per token", "blocks", "per sequence");
    std::uint32_t layers = 0, slots = 0;
    for (const KvKindAnswer& k : a.kinds) {
        std::printf("%-34s %12s %8llu %14s\n", k.title.c_str(), bytes_text(static_cast<double>(k.bytes_per_token)).c_str(),
                    static_cast<unsigned long long>(k.blocks_per_sequence),
                    bytes_text(static_cast<double>(k.bytes_per_sequence)).c_str());
        layers += k.n_layers;
        slots += k.layer_slots;
    }
    if (slots > layers)
        std::printf("%u layers a block, %u groups: %u padding layer slots counted\n", a.layers_per_block, a.groups,
                    slots - layers);
    if (frees_windows(q))
        std::printf("window layers hold W - 1 + %llu tokens (one step's chunk) and a block at most; every layer "
                    "global (--swa-full): %s a sequence, %.2fx\n",
                    static_cast<unsigned long long>(q.chunk_tokens),
                    bytes_text(static_cast<double>(a.whole_bytes_per_sequence)).c_str(),
                    static_cast<double>(a.whole_bytes_per_sequence) / static_cast<double>(a.bytes_per_sequence));
}

void print_table(const CalcModel& m, const KvMemoryQuestion& q, const KvMemoryAnswer& chosen,
                 const std::optional<CalcDevice>& device, const std::string& weights,
                 const std::vector<KvMemoryAnswer>& answers) {
    std::printf("KV cache of %s: %s, block size %u\n", m.name.c_str(), shape_text(m).c_str(), q.block_size);
    std::printf("%llu tokens per sequence x %llu sequences\n", static_cast<unsigned long long>(q.tokens_per_sequence),
                static_cast<unsigned long long>(q.sequences));
    if (device)
        std::printf("on %s (%s, %.0f%% usable) next to %s of weights (%s, %s parameters)\n", device->name.c_str(),
                    bytes_text(static_cast<double>(device->memory_bytes)).c_str(), q.memory_fraction * 100,
                    bytes_text(static_cast<double>(q.weight_bytes)).c_str(), weights.c_str(),
                    count_text(static_cast<double>(m.parameters)).c_str());
    if (!q.layer_windows.empty() || q.latent)
        print_kinds(q, chosen);
    const bool windows = frees_windows(q);
    std::printf("\n%-10s %12s %14s %14s %8s%s%s\n", "kv dtype", "per token", "per sequence", "total", "vs f16",
                windows ? "     all global   saved" : "", device ? "   sequences that fit" : "");
    const double f16_token = static_cast<double>(answer_kv_memory(q, KvDtype::F16).bytes_per_token);
    for (const KvMemoryAnswer& a : answers) {
        std::printf("%-10s %12s %14s %14s %7.2fx", std::string(to_string(a.dtype)).c_str(),
                    bytes_text(static_cast<double>(a.bytes_per_token)).c_str(),
                    bytes_text(static_cast<double>(a.bytes_per_sequence)).c_str(),
                    bytes_text(static_cast<double>(a.total_bytes)).c_str(),
                    f16_token / static_cast<double>(a.bytes_per_token));
        if (windows)
            std::printf(" %14s %6.2fx", bytes_text(static_cast<double>(a.whole_bytes_per_sequence)).c_str(),
                        static_cast<double>(a.whole_bytes_per_sequence) / static_cast<double>(a.bytes_per_sequence));
        if (a.sequences_that_fit) {
            std::printf(" %21llu", static_cast<unsigned long long>(*a.sequences_that_fit));
            if (windows)
                std::printf(" (all global: %llu)", static_cast<unsigned long long>(*a.whole_sequences_that_fit));
        }
        std::printf("%s\n", a.dtype == chosen.dtype ? "   <" : "");
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

void print_preset_line(const CalcPreset& p) {
    const CalcModel& m = p.model;
    if (p.geometry) {
        const ModelGeometry& g = *p.geometry;
        std::printf("  %-16s %-8s %2u layers, %2u heads, %2u KV heads, head_dim %3u, context %6u, %.2fB parameters",
                    g.name.c_str(), g.architecture.c_str(), g.n_layers, g.n_heads, g.n_kv_heads, g.head_dim(),
                    g.context, static_cast<double>(m.parameters) / 1e9);
        const std::string kinds = layer_kinds_text(g);
        std::printf("%s%s\n", kinds.empty() ? "" : "; ", kinds.c_str());
    } else {
        std::printf("  %-16s %-8s %2u layers, %3u heads, latent %u + %u per layer, context %6llu, %.2fB parameters\n",
                    m.name.c_str(), p.architecture.c_str(), m.kv.n_layers, m.n_heads, m.latent->latent_dim,
                    m.latent->rope_dim, static_cast<unsigned long long>(m.context),
                    static_cast<double>(m.parameters) / 1e9);
    }
    if (!p.calculator_only.empty())
        std::printf("  %-16s calculator only: %s\n", "", p.calculator_only.c_str());
}

// How a model keeps its KV small: "8 KV heads for 32", "window 1024 on 52
// of 62 layers", "latent 512 + 64 for 128 heads"; "-" for none.
std::string saving_text(const CalcModel& m) {
    if (m.latent)
        return "latent " + std::to_string(m.latent->latent_dim) + " + " + std::to_string(m.latent->rope_dim) +
               " for " + std::to_string(m.n_heads) + " heads";
    std::string text;
    if (m.n_heads > m.kv.n_kv_heads)
        text = std::to_string(m.kv.n_kv_heads) + " KV heads for " + std::to_string(m.n_heads);
    std::uint32_t windowed = 0, window = 0;
    for (std::uint32_t w : m.layer_windows) {
        windowed += w > 0 ? 1 : 0;
        window = std::max(window, w);
    }
    if (windowed > 0)
        text += (text.empty() ? "" : "; ") + std::string("window ") + std::to_string(window) + " on " +
                std::to_string(windowed) + " of " + std::to_string(m.kv.n_layers) + " layers";
    return text.empty() ? "-" : text;
}

// The three ways of saving KV memory side by side: every preset's f16 bytes
// for one sequence of the same length, from the calculator itself.
void print_savings() {
    constexpr std::uint64_t kTokens = 32768;
    std::printf("f16 KV of one %llu-token sequence, block 16, a 512-token chunk (fewer KV heads, windows, latents):\n",
                static_cast<unsigned long long>(kTokens));
    std::printf("  %-16s %12s %14s   %s\n", "model", "per token", "per sequence", "saved by");
    for (const CalcPreset& p : calc_presets()) {
        const CalcResult r = run_kv_calculator({.model = p.model, .tokens_per_sequence = kTokens});
        const KvMemoryAnswer f16 = answer_kv_memory(r.question, KvDtype::F16);
        std::printf("  %-16s %12s %14s   %s\n", p.model.name.c_str(),
                    bytes_text(static_cast<double>(f16.bytes_per_token)).c_str(),
                    bytes_text(static_cast<double>(f16.bytes_per_sequence)).c_str(), saving_text(p.model).c_str());
    }
}

void print_presets() {
    std::printf("model presets:\n");
    for (const CalcPreset& p : calc_presets())
        if (p.calculator_only.empty())
            print_preset_line(p);
    std::printf("calculator-only presets (kvscope cannot load or make them; for comparison):\n");
    for (const CalcPreset& p : calc_presets())
        if (!p.calculator_only.empty())
            print_preset_line(p);
    print_savings();
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
    in.chunk_tokens = static_cast<std::uint64_t>(args.int_or("--chunk", 512, 1, 1 << 24));
    in.keep_whole = args.flag("--swa-full");
    const KvDtype dtype = parse_kv_dtype(args.value_or("--kv-dtype", "f16"));
    in.device = read_device(args);
    in.weights = args.value("--weights");
    in.memory_fraction = args.number_or("--gpu-util", 0.9, 0.01, 1.0);
    const bool json = args.flag("--json");
    args.finish();
    if (in.device && in.model.parameters == 0)
        throw Error("--gpu needs --preset or --model: the weights' size comes from the model");
    const CalcResult r = run_kv_calculator(in);
    const KvMemoryAnswer chosen = answer_kv_memory(r.question, dtype); // throws for a dtype a latent cache has not
    if (json)
        print_json(in.model, r.question, dtype, in.device, r.weights, r.answers);
    else
        print_table(in.model, r.question, chosen, in.device, r.weights, r.answers);
    return 0;
}

} // namespace kvscope::cli
