// kvscope-cli bench batch: llama.cpp's llama-batched-bench experiment and
// table through kvscope's engine (engine/bench/batched_bench.h runs and
// times it); option parsing and printing here.
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "app/cli/commands.h"
#include "app/cli/count_list.h"
#include "app/cli/model_options.h"
#include "engine/bench/batched_bench.h"
#include "engine/core/error.h"

namespace kvscope::cli {
namespace {

using Shape = BatchedBenchShape;
using Row = BatchedBenchRow;

// The largest -npl: four times llama.cpp's LLAMA_MAX_SEQ (256), and small
// enough that B * PP and the pool's blocks stay far from 32-bit limits.
constexpr std::uint32_t kMaxSequences = 1024;

// llama-batched-bench's warm-up decodes 16 tokens of one sequence; this one
// runs the rows' largest prompt step (B x PP tokens) and up to 4 decode
// steps of it, so that no timed row pays for first calls of its size (the
// forward pass's buffers grow, and their fresh pages fault, once: that cost
// half the speed of the first 512-token prompt). The pool holds it, as it
// holds that row.
Shape warm_up_shape(const std::vector<Shape>& shapes) {
    Shape w = shapes.front();
    for (const Shape& s : shapes)
        if (s.batch * s.pp > w.batch * w.pp)
            w = s;
    w.tg = std::min<std::uint32_t>(w.tg, 4);
    return w;
}

// -npp etc. (llama-batched-bench's spelling) or --npp; one of them required.
std::vector<std::uint32_t> required_counts(Args& args, const std::string& name, std::uint32_t max,
                                           const char* meaning) {
    const auto single = args.value(name);
    const auto dashed = args.value("-" + name);
    if (single && dashed)
        throw Error(name + " and -" + name + " both given: use one");
    if (!single && !dashed)
        throw Error(name + " N[,N...] is required: " + meaning);
    return parse_count_list(name, single ? *single : *dashed, 1, max);
}

nlohmann::ordered_json row_json(const Row& r) {
    return {{"PP", r.shape.pp}, {"TG", r.shape.tg}, {"B", r.shape.batch}, {"N_KV", r.n_kv()},
            {"T_PP", r.t_pp},   {"S_PP", r.s_pp()}, {"T_TG", r.t_tg},     {"S_TG", r.s_tg()},
            {"T", r.t()},       {"S", r.s()}};
}

void print_json(const std::vector<Row>& rows, const Engine& engine, const std::string& path) {
    nlohmann::ordered_json j{{"model", path},
                             {"backend", std::string(to_string(engine.backend()))},
                             {"threads", engine.threads()},
                             {"kv_dtype", std::string(to_string(engine.config().kv_dtype))},
                             {"kv_blocks", engine.kv().config().num_blocks},
                             {"block_size", engine.config().block_size},
                             {"max_num_batched_tokens", engine.config().max_num_batched_tokens},
                             {"rows", nlohmann::ordered_json::array()}};
    for (const Row& r : rows)
        j["rows"].push_back(row_json(r));
    std::printf("%s\n", j.dump(2).c_str());
}

// llama-batched-bench's table, column for column.
void print_table(const std::vector<Row>& rows) {
    std::printf("|%6s | %6s | %4s | %6s | %8s | %8s | %8s | %8s | %8s | %8s |\n", "PP", "TG", "B", "N_KV", "T_PP s",
                "S_PP t/s", "T_TG s", "S_TG t/s", "T s", "S t/s");
    std::printf("|%6s-|-%6s-|-%4s-|-%6s-|-%8s-|-%8s-|-%8s-|-%8s-|-%8s-|-%8s-|\n", "------", "------", "----", "------",
                "--------", "--------", "--------", "--------", "--------", "--------");
    for (const Row& r : rows)
        std::printf("|%6u | %6u | %4u | %6llu | %8.3f | %8.2f | %8.3f | %8.2f | %8.3f | %8.2f |\n", r.shape.pp,
                    r.shape.tg, r.shape.batch, static_cast<unsigned long long>(r.n_kv()), r.t_pp, r.s_pp(), r.t_tg,
                    r.s_tg(), r.t(), r.s());
}

// One decode step of B sequences against one of a single sequence, per
// (PP, TG) that has a B = 1 row: what batching costs per step (issue 18's
// acceptance: 8 sequences at most 2x one).
void print_decode_steps(const std::vector<Row>& rows) {
    std::printf("\ndecode step (T_TG / TG):\n");
    for (const Row& r : rows) {
        std::printf("  PP %u, TG %u, B %u: %.3f ms", r.shape.pp, r.shape.tg, r.shape.batch, r.decode_step_ms());
        if (r.prompt_steps > 1) // see BatchedBenchRow::prompt_steps
            std::printf("  (prompts took %u steps: --max-batched-tokens < B*PP)", r.prompt_steps);
        std::printf("\n");
    }
    for (const Row& one : rows) {
        if (one.shape.batch != 1)
            continue;
        std::string ratios;
        for (const Row& r : rows)
            if (r.shape.pp == one.shape.pp && r.shape.tg == one.shape.tg && r.shape.batch != 1) {
                char cell[48];
                std::snprintf(cell, sizeof cell, "%s%u: %.2fx", ratios.empty() ? "" : ", ", r.shape.batch,
                              r.decode_step_ms() / one.decode_step_ms());
                ratios += cell;
            }
        if (!ratios.empty())
            std::printf("decode step, B sequences / 1 sequence (PP %u, TG %u): %s\n", one.shape.pp, one.shape.tg,
                        ratios.c_str());
    }
}

} // namespace

int run_bench_batch(Args& args) {
    const std::string path = required_model_path(args);
    const auto pp = required_counts(args, "-npp", 1 << 20, "prompt tokens per sequence");
    const auto tg = required_counts(args, "-ntg", 1 << 20, "tokens each sequence generates");
    const auto pl = required_counts(args, "-npl", kMaxSequences, "sequences decoding together (B)");
    EngineConfig config;
    config.backend = read_backend(args);
    config.threads = read_threads(args);
    config.kv_dtype = parse_kv_dtype(args.value_or("--kv-dtype", "f16"));
    config.block_size = static_cast<std::uint32_t>(args.int_or("--block-size", 16, 1, 1024));
    config.kv_budget_mib = args.number_or("--kv-budget-mib", 0, 0, 1 << 20);
    config.max_num_batched_tokens = static_cast<std::uint32_t>(args.int_or("--max-batched-tokens", 0, 0, 1 << 24));
    const bool json = args.flag("--json");
    args.finish();

    const auto model = std::make_shared<const Model>(path);
    const std::vector<Shape> shapes = batched_bench_shapes(pp, tg, pl);
    Engine engine(batched_bench_config(config, shapes, *model), model);
    run_batched_bench_row(engine, warm_up_shape(shapes));
    std::vector<Row> rows;
    for (const Shape& s : shapes)
        rows.push_back(run_batched_bench_row(engine, s));
    if (json) {
        print_json(rows, engine, path);
        return 0;
    }
    std::printf("%s: %s backend, %d threads, %s KV, KV pool %u blocks of %u tokens, max_num_batched_tokens %u, "
                "max_num_seqs %u, no prefix caching\n\n",
                path.c_str(), std::string(to_string(engine.backend())).c_str(), engine.threads(),
                std::string(to_string(engine.config().kv_dtype)).c_str(), engine.kv().config().num_blocks,
                engine.config().block_size, engine.config().max_num_batched_tokens, engine.config().max_num_seqs);
    print_table(rows);
    print_decode_steps(rows);
    return 0;
}

} // namespace kvscope::cli
