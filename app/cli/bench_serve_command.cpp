// kvscope-cli bench serve: one workload through paged and contiguous KV
// allocation, side by side — the PagedAttention experiment on this machine —
// and, given several KV dtypes, through each of them in the same KV memory
// budget, to show how many more sequences a smaller dtype fits.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "app/cli/commands.h"
#include "app/cli/kv_dtype_list.h"
#include "app/cli/model_options.h"
#include "engine/core/error.h"
#include "engine/kv/kv_layout.h"
#include "engine/model/synthetic_model.h"
#include "engine/workload/serve_run.h"

namespace kvscope::cli {
namespace {

// --model FILE, or --preset NAME: a synthetic model written to a temporary file.
std::shared_ptr<const Model> bench_model(Args& args, std::filesystem::path& temp) {
    const auto path = optional_model_path(args);
    const auto preset = args.value("--preset");
    const std::string type = args.value_or("--type", "q8_0");
    if (path.has_value() == preset.has_value())
        throw Error("bench serve needs exactly one of --model FILE and --preset NAME");
    if (path)
        return std::make_shared<const Model>(*path);
    temp = std::filesystem::temp_directory_path() / ("kvscope-bench-" + *preset + "-" + type + ".gguf");
    const GgmlType t = type == "f16" ? GgmlType::F16 : type == "q4_0" ? GgmlType::Q4_0 : GgmlType::Q8_0;
    write_synthetic_model(find_model_preset(*preset), t, 1, temp.string());
    return std::make_shared<const Model>(temp.string());
}

WorkloadSpec read_workload(Args& args, const Model& model) {
    WorkloadSpec w;
    w.requests = static_cast<std::uint32_t>(args.int_or("--requests", 48, 1, 1000000));
    w.distribution = parse_length_distribution(args.value_or("--lengths", "sharegpt"));
    w.prompt_len = static_cast<std::uint32_t>(args.int_or("--prompt-len", 128, 1, 1 << 20));
    w.output_len = static_cast<std::uint32_t>(args.int_or("--output-len", 128, 1, 1 << 20));
    w.max_total = static_cast<std::uint32_t>(args.int_or("--max-total", 512, 8, 1 << 20));
    w.arrival_rate = args.number_or("--rate", 0, 0, 1e6);
    w.shared_prefix = static_cast<std::uint32_t>(args.int_or("--shared-prefix", 0, 0, 1 << 20));
    w.n = static_cast<std::uint32_t>(args.int_or("--n", 1, 1, 64));
    w.seed = static_cast<std::uint64_t>(args.int_or("--seed", 1, 0, INT64_MAX));
    w.vocab = model.config().vocab_size;
    w.oracle_lengths = args.flag("--oracle-lengths");
    return w;
}

double ms_per_step(const StepTime& t) { return t.steps ? 1000 * t.seconds / static_cast<double>(t.steps) : 0; }

// Decode-only steps by the number of sequences they decoded: what one
// more sequence in the batch costs on this machine, which is what paging's
// extra concurrency is worth.
nlohmann::ordered_json decode_steps_json(const ServeRunResult& r) {
    nlohmann::ordered_json rows = nlohmann::ordered_json::array();
    for (std::size_t k = 1; k < r.decode_steps.size(); ++k)
        if (r.decode_steps[k].steps > 0)
            rows.push_back({{"seqs", k},
                            {"steps", r.decode_steps[k].steps},
                            {"seconds", r.decode_steps[k].seconds},
                            {"ms_per_step", ms_per_step(r.decode_steps[k])}});
    return rows;
}

nlohmann::ordered_json run_json(const ServeRunResult& r) {
    return {{"mode", std::string(to_string(r.config.allocation))},
            {"swa_full", r.config.swa_full},
            {"kv_dtype", std::string(to_string(r.config.kv_dtype))},
            {"block_size", r.config.block_size},
            {"kv_blocks", r.kv_blocks},
            {"requests", r.requests},
            {"completed", r.completed},
            {"failed", r.failed},
            {"seconds", r.seconds},
            {"generation_tokens_per_second", r.generation_tokens_per_s()},
            {"total_tokens_per_second", r.total_tokens_per_s()},
            {"mean_running_seqs", r.mean_running},
            {"peak_running_seqs", r.peak_running},
            {"token_occupancy_pct", 100 * r.token_occupancy},
            {"internal_waste_pct", 100 * r.internal_waste},
            {"reserved_waste_pct", 100 * r.reserved_waste},
            {"external_fragmentation_pct", 100 * r.external_fragmentation},
            {"preemptions", r.preemptions},
            {"prefix_hit_tokens", r.prefix_hit_tokens},
            {"ttft_p50_ms", r.ttft.p50_ms},
            {"ttft_p95_ms", r.ttft.p95_ms},
            {"decode_steps", decode_steps_json(r)},
            {"prefill_steps", {{"steps", r.prefill_steps.steps}, {"seconds", r.prefill_steps.seconds}}}};
}

// --kv-dtype D[,D...]: one dtype, or several with f16 first as the reference.
std::vector<KvDtype> read_kv_dtypes(Args& args) {
    std::vector<KvDtype> dtypes = parse_kv_dtype_list(args.value_or("--kv-dtype", "f16"));
    if (dtypes.size() > 1) {
        std::erase(dtypes, KvDtype::F16);
        dtypes.insert(dtypes.begin(), KvDtype::F16);
    }
    return dtypes;
}

double ratio(double value, double reference) { return reference > 0 ? value / reference : 0; }

// Each run against the f16 run of the same allocation mode: what the same
// budget holds and what the workload got out of it. Sequences that fit are
// full-length ones (prompt + output = max_total tokens), from KvLayout.
nlohmann::ordered_json dtype_comparison(const std::vector<ServeRunResult>& runs, const Model& model,
                                        const WorkloadSpec& spec) {
    const ModelConfig& m = model.config();
    nlohmann::ordered_json rows = nlohmann::ordered_json::array();
    for (const ServeRunResult& r : runs) {
        const ServeRunResult& f16 = *std::find_if(runs.begin(), runs.end(), [&](const ServeRunResult& x) {
            return x.config.kv_dtype == KvDtype::F16 && x.config.allocation == r.config.allocation;
        });
        const KvLayout layout = engine_kv_layout(r.config, m);
        rows.push_back({{"kv_dtype", std::string(to_string(r.config.kv_dtype))},
                        {"mode", std::string(to_string(r.config.allocation))},
                        {"bytes_per_block", layout.bytes_per_block()},
                        {"kv_blocks", r.kv_blocks},
                        {"blocks_vs_f16", ratio(r.kv_blocks, f16.kv_blocks)},
                        {"sequences_fit", r.kv_blocks / layout.sequence_blocks(spec.max_total, r.config.max_num_batched_tokens)},
                        {"mean_running_seqs", r.mean_running},
                        {"concurrency_vs_f16", ratio(r.mean_running, f16.mean_running)},
                        {"generation_tokens_per_second", r.generation_tokens_per_s()},
                        {"throughput_vs_f16", ratio(r.generation_tokens_per_s(), f16.generation_tokens_per_s())}});
    }
    return rows;
}

void print_dtype_comparison(const nlohmann::ordered_json& rows, std::uint32_t max_total) {
    std::printf("\n  same KV budget, against f16 (full sequences: %u tokens each)\n", max_total);
    std::printf("  %-10s %-11s %12s %9s %7s %10s %13s %7s %10s %7s\n", "KV dtype", "mode", "bytes/block",
                "KV blocks", "x f16", "full seqs", "mean running", "x f16", "gen tok/s", "x f16");
    for (const auto& r : rows)
        std::printf("  %-10s %-11s %12zu %9u %6.2fx %10zu %13.2f %6.2fx %10.1f %6.2fx\n",
                    r["kv_dtype"].get<std::string>().c_str(), r["mode"].get<std::string>().c_str(),
                    r["bytes_per_block"].get<std::size_t>(), r["kv_blocks"].get<std::uint32_t>(),
                    r["blocks_vs_f16"].get<double>(), r["sequences_fit"].get<std::size_t>(),
                    r["mean_running_seqs"].get<double>(), r["concurrency_vs_f16"].get<double>(),
                    r["generation_tokens_per_second"].get<double>(), r["throughput_vs_f16"].get<double>());
}

void print_table(const std::vector<ServeRunResult>& runs) {
    auto row = [&](const char* name, auto value) {
        std::printf("  %-28s", name);
        for (const ServeRunResult& r : runs)
            std::printf(" %14s", value(r).c_str());
        std::printf("\n");
    };
    auto num = [](double v, const char* fmt) {
        char text[32];
        std::snprintf(text, sizeof text, fmt, v);
        return std::string(text);
    };
    row("", [](const ServeRunResult& r) { return std::string(to_string(r.config.allocation)); });
    if (runs.front().config.swa_full != runs.back().config.swa_full)
        row("window layers", [](const ServeRunResult& r) { return std::string(r.config.swa_full ? "whole" : "free"); });
    if (runs.front().config.kv_dtype != runs.back().config.kv_dtype)
        row("KV dtype", [](const ServeRunResult& r) { return std::string(to_string(r.config.kv_dtype)); });
    row("KV blocks", [&](const ServeRunResult& r) { return num(r.kv_blocks, "%.0f"); });
    row("completed", [&](const ServeRunResult& r) { return num(r.completed, "%.0f") + "/" + std::to_string(r.requests); });
    row("generation tok/s", [&](const ServeRunResult& r) { return num(r.generation_tokens_per_s(), "%.1f"); });
    row("total tok/s", [&](const ServeRunResult& r) { return num(r.total_tokens_per_s(), "%.1f"); });
    row("mean running seqs", [&](const ServeRunResult& r) { return num(r.mean_running, "%.2f"); });
    row("peak running seqs", [&](const ServeRunResult& r) { return num(double(r.peak_running), "%.0f"); });
    row("KV token occupancy %", [&](const ServeRunResult& r) { return num(100 * r.token_occupancy, "%.1f"); });
    row("internal waste %", [&](const ServeRunResult& r) { return num(100 * r.internal_waste, "%.1f"); });
    row("reserved waste %", [&](const ServeRunResult& r) { return num(100 * r.reserved_waste, "%.1f"); });
    row("external fragmentation %", [&](const ServeRunResult& r) { return num(100 * r.external_fragmentation, "%.1f"); });
    row("preemptions", [&](const ServeRunResult& r) { return num(double(r.preemptions), "%.0f"); });
    row("prefix cache hits, tokens", [&](const ServeRunResult& r) { return num(double(r.prefix_hit_tokens), "%.0f"); });
    row("TTFT p50 / p95 ms", [&](const ServeRunResult& r) {
        return num(r.ttft.p50_ms, "%.0f") + " / " + num(r.ttft.p95_ms, "%.0f");
    });
    row("seconds", [&](const ServeRunResult& r) { return num(r.seconds, "%.1f"); });
}

// Where each run's time went: decode-only steps by batch size (ms per
// step and share of the run), then the steps that carried prompt tokens.
void print_step_times(const std::vector<ServeRunResult>& runs) {
    std::size_t most = 0;
    for (const ServeRunResult& r : runs)
        most = std::max(most, r.decode_steps.size());
    std::printf("\n  decode-only steps by sequences decoding: ms per step (share of the run)\n");
    auto share = [](const StepTime& t, const ServeRunResult& r) { return r.seconds > 0 ? 100 * t.seconds / r.seconds : 0; };
    for (std::size_t k = 1; k < most; ++k) {
        std::printf("  %-28zu", k);
        for (const ServeRunResult& r : runs) {
            char cell[32] = "-";
            if (k < r.decode_steps.size() && r.decode_steps[k].steps > 0)
                std::snprintf(cell, sizeof cell, "%.2f (%4.1f%%)", ms_per_step(r.decode_steps[k]),
                              share(r.decode_steps[k], r));
            std::printf(" %14s", cell);
        }
        std::printf("\n");
    }
    std::printf("  %-28s", "steps with prompt tokens, s");
    for (const ServeRunResult& r : runs) {
        char cell[32];
        std::snprintf(cell, sizeof cell, "%.1f (%4.1f%%)", r.prefill_steps.seconds, share(r.prefill_steps, r));
        std::printf(" %14s", cell);
    }
    std::printf("\n");
}

} // namespace

int run_bench_serve(Args& args) {
    std::filesystem::path temp;
    const std::shared_ptr<const Model> model = bench_model(args, temp);
    const WorkloadSpec spec = read_workload(args, *model);
    EngineConfig base;
    read_serving_options(args, base, 24);
    const std::vector<KvDtype> dtypes = read_kv_dtypes(args);
    base.kv_dtype = dtypes.front();
    const std::string mode = args.value_or("--mode", "both");
    const std::string swa = args.value_or("--swa", base.swa_full ? "full" : "window");
    const bool json = args.flag("--json");
    args.finish();
    std::vector<AllocationMode> modes;
    if (mode == "paged" || mode == "both")
        modes.push_back(AllocationMode::Paged);
    if (mode == "contiguous" || mode == "both")
        modes.push_back(AllocationMode::Contiguous);
    if (modes.empty())
        throw Error("--mode must be paged, contiguous or both");
    std::vector<bool> swa_full;
    if (swa == "window" || swa == "both")
        swa_full.push_back(false);
    if (swa == "full" || swa == "both")
        swa_full.push_back(true);
    if (swa_full.empty())
        throw Error("--swa must be window, full or both");

    const std::vector<WorkloadRequest> workload = make_workload(spec);
    std::vector<ServeRunResult> runs;
    for (KvDtype d : dtypes)
        for (AllocationMode m : modes)
            for (bool whole : swa_full) {
                EngineConfig c = base;
                c.kv_dtype = d;
                c.allocation = m;
                c.swa_full = whole;
                runs.push_back(run_workload(c, model, workload, spec.n));
            }
    if (!temp.empty())
        std::filesystem::remove(temp);

    nlohmann::ordered_json j{{"workload", {{"requests", spec.requests},
                                           {"lengths", std::string(to_string(spec.distribution))},
                                           {"max_total", spec.max_total},
                                           {"arrival_rate", spec.arrival_rate},
                                           {"shared_prefix", spec.shared_prefix},
                                           {"n", spec.n},
                                           {"seed", spec.seed},
                                           {"oracle_lengths", spec.oracle_lengths}}},
                             {"runs", nlohmann::ordered_json::array()}};
    for (const ServeRunResult& r : runs)
        j["runs"].push_back(run_json(r));
    if (modes.size() == 2) { // paged / contiguous, of the first (reference) dtype and window setting
        const ServeRunResult& paged = runs[0];
        const ServeRunResult& contiguous = runs[swa_full.size()];
        const double throughput = ratio(paged.generation_tokens_per_s(), contiguous.generation_tokens_per_s());
        const double concurrency = ratio(paged.mean_running, contiguous.mean_running);
        j["ratios"] = {{"throughput", throughput}, {"concurrency", concurrency}};
    }
    if (swa_full.size() == 2) // freeing window blocks / keeping them (--swa-full), the first run of each
        j["swa_ratios"] = {{"throughput", ratio(runs[0].generation_tokens_per_s(), runs[1].generation_tokens_per_s())},
                           {"concurrency", ratio(runs[0].mean_running, runs[1].mean_running)},
                           {"peak_running", ratio(static_cast<double>(runs[0].peak_running),
                                                  static_cast<double>(runs[1].peak_running))},
                           {"outputs_identical", runs[0].outputs_digest == runs[1].outputs_digest}};
    if (dtypes.size() > 1)
        j["kv_dtypes"] = dtype_comparison(runs, *model, spec);
    if (json) {
        std::printf("%s\n", j.dump(2).c_str());
        return 0;
    }
    std::string dtype_names;
    for (KvDtype d : dtypes)
        dtype_names += (dtype_names.empty() ? "" : ", ") + std::string(to_string(d));
    std::printf("%u requests (%s lengths, prompt + output <= %u), KV budget %.1f MiB, %s KV, block size %u\n",
                spec.requests, std::string(to_string(spec.distribution)).c_str(), spec.max_total, base.kv_budget_mib,
                dtype_names.c_str(), base.block_size);
    std::printf("each request asks for %s; contiguous allocation reserves prompt + that\n",
                spec.oracle_lengths ? "exactly its reply length (--oracle-lengths)"
                                    : "up to the cap (max_total - prompt) new tokens, its reply ending at its drawn length");
    print_table(runs);
    if (j.contains("ratios"))
        std::printf("  paged / contiguous%s: throughput %.2fx, concurrency %.2fx\n",
                    dtypes.size() > 1 ? " (f16)" : "", j["ratios"]["throughput"].get<double>(),
                    j["ratios"]["concurrency"].get<double>());
    if (j.contains("swa_ratios"))
        std::printf("  window freeing / --swa-full: concurrency %.2fx (peak %.2fx), throughput %.2fx; outputs %s\n",
                    j["swa_ratios"]["concurrency"].get<double>(), j["swa_ratios"]["peak_running"].get<double>(),
                    j["swa_ratios"]["throughput"].get<double>(),
                    j["swa_ratios"]["outputs_identical"].get<bool>() ? "identical" : "DIFFERENT");
    print_step_times(runs);
    if (j.contains("kv_dtypes"))
        print_dtype_comparison(j["kv_dtypes"], spec.max_total);
    return 0;
}

} // namespace kvscope::cli
