// kvscope-cli bench attention: option parsing and printing around
// engine/bench/attention_bench.h, which runs and times the attention kernel
// (paged against contiguous, per KV dtype and context length; decode, or a
// prompt chunk with --queries).
#include <cstdio>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "app/cli/commands.h"
#include "app/cli/count_list.h"
#include "app/cli/kv_dtype_list.h"
#include "app/cli/model_options.h"
#include "engine/bench/attention_bench.h"
#include "engine/core/backend.h"
#include "engine/core/device.h"
#include "engine/core/error.h"
#include "kernels/cpu/parallel.h"

namespace kvscope::cli {
namespace {

using Shape = AttentionBenchShape;
using Row = AttentionBenchRow;

Shape read_shape(Args& args) {
    Shape s{};
    s.heads = static_cast<std::uint32_t>(args.int_or("--heads", 32, 1, 1024));
    s.kv_heads = static_cast<std::uint32_t>(args.int_or("--kv-heads", 8, 1, 1024));
    s.head_dim = static_cast<std::uint32_t>(args.int_or("--head-dim", 128, 2, 1024));
    s.block_size = static_cast<std::uint32_t>(args.int_or("--block-size", 16, 1, 1024));
    s.batch = static_cast<std::uint32_t>(args.int_or("--batch", 1, 1, 1024));
    s.repeats = static_cast<std::uint32_t>(args.int_or("--repeats", 7, 1, 1000));
    s.queries = static_cast<std::uint32_t>(args.int_or("--queries", 1, 1, 1 << 20));
    if (s.heads % s.kv_heads != 0)
        throw Error("--heads " + std::to_string(s.heads) + " is not a multiple of --kv-heads " +
                    std::to_string(s.kv_heads));
    return s;
}

void print_table(const std::vector<Row>& rows, const Shape& s, int threads) {
    if (s.queries == 1)
        std::printf("decode attention");
    else
        std::printf("prompt attention, the last %u tokens of each context", s.queries);
    std::printf(", one layer: %u heads, %u KV heads, head_dim %u, block %u, batch %u, %d threads, median of %u\n",
                s.heads, s.kv_heads, s.head_dim, s.block_size, s.batch, threads, s.repeats);
    std::printf("%-10s %8s %-11s %12s %12s %10s %8s %14s\n", "kv_dtype", "context", "layout", "us/call", "tokens/s",
                "MB/call", "GB/s", "paged/contig");
    for (std::size_t i = 0; i < rows.size(); ++i) {
        const Row& r = rows[i];
        std::string ratio;
        if (!r.paged) // rows come in (paged, contiguous) pairs
            ratio = std::to_string(rows[i - 1].seconds / r.seconds).substr(0, 5);
        std::printf("%-10s %8u %-11s %12.1f %12.0f %10.2f %8.2f %14s\n", std::string(to_string(r.dtype)).c_str(),
                    r.context, r.paged ? "paged" : "contiguous", r.seconds * 1e6, s.batch * s.queries / r.seconds, r.bytes / 1e6,
                    r.bytes / r.seconds / 1e9, ratio.c_str());
    }
}

void print_json(const std::vector<Row>& rows, const Shape& s, int threads) {
    nlohmann::ordered_json j{{"heads", s.heads},       {"kv_heads", s.kv_heads}, {"head_dim", s.head_dim},
                             {"block_size", s.block_size}, {"batch", s.batch},  {"queries", s.queries}, {"threads", threads},
                             {"repeats", s.repeats},   {"rows", nlohmann::ordered_json::array()}};
    for (std::size_t i = 0; i < rows.size(); ++i) {
        const Row& r = rows[i];
        nlohmann::ordered_json row{{"kv_dtype", std::string(to_string(r.dtype))},
                                   {"context", r.context},
                                   {"layout", r.paged ? "paged" : "contiguous"},
                                   {"seconds_per_call", r.seconds},
                                   {"gb_per_s", r.bytes / r.seconds / 1e9},
                                   {"tokens_per_s", s.batch * s.queries / r.seconds},
                                   {"bytes_per_call", r.bytes}};
        if (!r.paged)
            row["paged_over_contiguous"] = rows[i - 1].seconds / r.seconds;
        j["rows"].push_back(row);
    }
    std::printf("%s\n", j.dump(2).c_str());
}

} // namespace

int run_bench_attention(Args& args) {
    const int threads = kernels::cpu::resolve_threads(read_threads(args));
    const std::vector<std::uint32_t> contexts =
        parse_count_list("--context", args.value_or("--context", "512,2048,8192"), 1, 1 << 20);
    const std::vector<KvDtype> dtypes = parse_kv_dtype_list(args.value_or("--kv-dtype", "f16,int8,int4,int4-kivi"));
    const Shape s = read_shape(args);
    const Backend backend = resolve_backend(read_backend(args), detect_device());
    const bool json = args.flag("--json");
    args.finish();

    if (backend == Backend::Cuda) {
        double copy_gb_s = 0;
        const std::vector<Row> rows = bench_cuda_attention(s, dtypes, contexts, copy_gb_s);
        if (json) {
            print_json(rows, s, threads);
        } else {
            print_table(rows, s, threads);
            std::printf("on %s; device-to-device copy (measured): %.1f GB/s\n", device_memory().name.c_str(),
                        copy_gb_s);
        }
        return 0;
    }
    const std::vector<Row> rows = bench_cpu_attention(s, dtypes, contexts, threads);
    if (json)
        print_json(rows, s, threads);
    else
        print_table(rows, s, threads);
    return 0;
}

} // namespace kvscope::cli
