// kvscope-cli bench attention: the decode attention kernel alone, per KV
// dtype and context length, through a block table over shuffled blocks
// (paged) and over the same data in consecutive blocks with no table
// (contiguous), in the same run, so that the price of the page-table
// indirection is a measured ratio.
//
// One call is one decode step of one layer for the whole batch: every
// sequence's single query (all query heads) attends over its `context`
// cached tokens. Bytes moved per call are the cached K/V rows and scales
// the kernel reads, counted by KvLayout. Each figure is the median of
// --repeats timings; a timing runs calls until at least 20 ms have passed.
// Paged and contiguous timings alternate so that drift (other processes,
// frequency changes) hits both alike.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "app/cli/commands.h"
#include "app/cli/kv_dtype_list.h"
#include "app/cli/model_options.h"
#include "engine/core/backend.h"
#include "engine/core/device.h"
#include "engine/core/error.h"
#include "engine/kv/kv_layout.h"
#include "engine/runtime/paged_kv_view.h"
#include "kernels/cpu/kv_write.h"
#include "kernels/cpu/paged_attention.h"
#include "kernels/cpu/parallel.h"

#ifdef KVSCOPE_HAVE_CUDA
#include "kernels/cuda/attention_bench.h"
#endif

namespace kvscope::cli {
namespace {

namespace cpu = kernels::cpu;

struct Shape {
    std::uint32_t heads, kv_heads, head_dim, block_size, batch, repeats;
};

// One layout of the batch's caches: a pool, each sequence's block table
// (paged) or first block (contiguous), and its KIVI tail.
struct Caches {
    KvLayout layout;
    std::vector<std::byte> pool;
    std::vector<float> fixed_scales;
    std::vector<std::vector<std::uint32_t>> tables;
    std::vector<std::vector<std::byte>> tails;
    cpu::PagedKv kv;
};

Caches make_caches(const Shape& s, KvDtype dtype, std::uint32_t context, bool paged, std::mt19937& rng) {
    Caches c{KvLayout({1, s.kv_heads, s.head_dim}, dtype, s.block_size), {}, {}, {}, {}, {}};
    const std::size_t per_seq = c.layout.blocks_for_tokens(context);
    const std::size_t n_blocks = per_seq * s.batch;
    c.pool.assign(n_blocks * c.layout.bytes_per_block(), std::byte{0});
    c.fixed_scales.assign(c.layout.fixed_bytes() / sizeof(float), 1.0f);
    std::vector<std::uint32_t> order(n_blocks);
    std::iota(order.begin(), order.end(), 0u);
    if (paged)
        std::shuffle(order.begin(), order.end(), rng);
    for (std::uint32_t i = 0; i < s.batch; ++i) {
        c.tables.emplace_back(order.begin() + static_cast<std::ptrdiff_t>(i * per_seq),
                              order.begin() + static_cast<std::ptrdiff_t>((i + 1) * per_seq));
        c.tails.emplace_back(c.layout.tail_bytes());
    }
    c.kv = paged_kv_view(c.layout, 0, c.pool.data(), n_blocks, c.fixed_scales.empty() ? nullptr : c.fixed_scales.data());
    return c;
}

// The same pseudo-random K/V (seeded per sequence) into either layout.
void fill(Caches& c, const Shape& s, std::uint32_t context) {
    const std::size_t row = std::size_t{s.kv_heads} * s.head_dim;
    std::vector<float> k(row), v(row);
    for (std::uint32_t i = 0; i < s.batch; ++i) {
        std::mt19937 rng(1000 + i);
        std::normal_distribution<float> normal(0.0f, 1.0f);
        for (std::uint32_t p = 0; p < context; ++p) {
            for (std::size_t d = 0; d < row; ++d) {
                k[d] = normal(rng);
                v[d] = normal(rng);
            }
            cpu::write_kv(c.kv, c.tables[i][p / s.block_size], p % s.block_size, k.data(), v.data(),
                          c.tails[i].data());
        }
    }
}

// One decode step of one layer for the whole batch.
void step(const Caches& c, const Shape& s, std::uint32_t context, bool paged, const std::vector<float>& q,
          std::vector<float>& out, std::vector<float>& scratch) {
    const std::size_t q_row = std::size_t{s.heads} * s.head_dim;
    for (std::uint32_t i = 0; i < s.batch; ++i) {
        const float* qi = q.data() + i * q_row;
        float* oi = out.data() + i * q_row;
        const std::byte* tail = c.tails[i].empty() ? nullptr : c.tails[i].data();
        if (paged) {
            cpu::paged_attention(c.kv, c.tables[i], context, qi, 1, s.heads, oi, scratch, tail);
        } else {
            // This sequence's consecutive blocks, from its first one on.
            cpu::PagedKv own = c.kv;
            own.pool += std::size_t{c.tables[i].front()} * c.layout.bytes_per_block();
            own.n_blocks = c.tables[i].size();
            cpu::contiguous_attention(own, context, qi, 1, s.heads, oi, scratch, tail);
        }
    }
}

double seconds_per_step(const Caches& c, const Shape& s, std::uint32_t context, bool paged,
                        const std::vector<float>& q, std::vector<float>& out, std::vector<float>& scratch) {
    using clock = std::chrono::steady_clock;
    const auto start = clock::now();
    std::size_t calls = 0;
    double elapsed = 0;
    do {
        step(c, s, context, paged, q, out, scratch);
        ++calls;
        elapsed = std::chrono::duration<double>(clock::now() - start).count();
    } while (elapsed < 0.02 || calls < 3);
    return elapsed / static_cast<double>(calls);
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

// The cached bytes one sequence's decode reads: its sealed blocks whole,
// and the rows of its last, partial block (KIVI: from the f16 tail).
double bytes_read(const KvLayout& layout, std::uint32_t context) {
    const std::size_t full = context / layout.block_size(), rest = context % layout.block_size();
    const std::size_t rest_token_bytes =
        seals_blocks(layout.dtype()) ? layout.tail_layout().bytes_per_token() : layout.bytes_per_token();
    return static_cast<double>(full * layout.bytes_per_block() + rest * rest_token_bytes);
}

struct Row {
    KvDtype dtype;
    std::uint32_t context;
    bool paged;
    double seconds;
    double bytes; // per call
};

std::vector<std::uint32_t> parse_contexts(const std::string& text) {
    std::vector<std::uint32_t> contexts;
    for (std::size_t start = 0;;) {
        const std::size_t comma = text.find(',', start);
        const std::string word = text.substr(start, comma - start);
        std::size_t used = 0;
        long long n = 0;
        try {
            n = std::stoll(word, &used);
        } catch (const std::exception&) {
            used = 0;
        }
        if (used != word.size() || word.empty() || n < 1 || n > (1 << 20))
            throw Error("--context takes token counts 1..1048576 separated by commas, got '" + word + "'");
        contexts.push_back(static_cast<std::uint32_t>(n));
        if (comma == std::string::npos)
            return contexts;
        start = comma + 1;
    }
}

Shape read_shape(Args& args) {
    Shape s{};
    s.heads = static_cast<std::uint32_t>(args.int_or("--heads", 32, 1, 1024));
    s.kv_heads = static_cast<std::uint32_t>(args.int_or("--kv-heads", 8, 1, 1024));
    s.head_dim = static_cast<std::uint32_t>(args.int_or("--head-dim", 128, 2, 1024));
    s.block_size = static_cast<std::uint32_t>(args.int_or("--block-size", 16, 1, 1024));
    s.batch = static_cast<std::uint32_t>(args.int_or("--batch", 1, 1, 1024));
    s.repeats = static_cast<std::uint32_t>(args.int_or("--repeats", 7, 1, 1000));
    if (s.heads % s.kv_heads != 0)
        throw Error("--heads " + std::to_string(s.heads) + " is not a multiple of --kv-heads " +
                    std::to_string(s.kv_heads));
    return s;
}

void print_table(const std::vector<Row>& rows, const Shape& s) {
    std::printf("decode attention, one layer: %u heads, %u KV heads, head_dim %u, block %u, batch %u, %d threads, "
                "median of %u\n",
                s.heads, s.kv_heads, s.head_dim, s.block_size, s.batch, kernels::cpu::num_threads(), s.repeats);
    std::printf("%-10s %8s %-11s %12s %12s %10s %8s %14s\n", "kv_dtype", "context", "layout", "us/call", "tokens/s",
                "MB/call", "GB/s", "paged/contig");
    for (std::size_t i = 0; i < rows.size(); ++i) {
        const Row& r = rows[i];
        std::string ratio;
        if (!r.paged) // rows come in (paged, contiguous) pairs
            ratio = std::to_string(rows[i - 1].seconds / r.seconds).substr(0, 5);
        std::printf("%-10s %8u %-11s %12.1f %12.0f %10.2f %8.2f %14s\n", std::string(to_string(r.dtype)).c_str(),
                    r.context, r.paged ? "paged" : "contiguous", r.seconds * 1e6, s.batch / r.seconds, r.bytes / 1e6,
                    r.bytes / r.seconds / 1e9, ratio.c_str());
    }
}

void print_json(const std::vector<Row>& rows, const Shape& s) {
    nlohmann::ordered_json j{{"heads", s.heads},       {"kv_heads", s.kv_heads}, {"head_dim", s.head_dim},
                             {"block_size", s.block_size}, {"batch", s.batch},  {"threads", kernels::cpu::num_threads()},
                             {"repeats", s.repeats},   {"rows", nlohmann::ordered_json::array()}};
    for (std::size_t i = 0; i < rows.size(); ++i) {
        const Row& r = rows[i];
        nlohmann::ordered_json row{{"kv_dtype", std::string(to_string(r.dtype))},
                                   {"context", r.context},
                                   {"layout", r.paged ? "paged" : "contiguous"},
                                   {"seconds_per_call", r.seconds},
                                   {"gb_per_s", r.bytes / r.seconds / 1e9},
                                   {"tokens_per_s", s.batch / r.seconds},
                                   {"bytes_per_call", r.bytes}};
        if (!r.paged)
            row["paged_over_contiguous"] = rows[i - 1].seconds / r.seconds;
        j["rows"].push_back(row);
    }
    std::printf("%s\n", j.dump(2).c_str());
}

// --backend cuda: the CUDA kernel on the same shapes, timed by CUDA events
// (kernels/cuda/attention_bench.h: mean of 20 calls after 3 untimed), plus
// a device-to-device copy of 1 GiB as the bandwidth ceiling.
std::vector<Row> cuda_rows(const Shape& s, const std::vector<KvDtype>& dtypes,
                           const std::vector<std::uint32_t>& contexts, double& copy_gb_s) {
#ifdef KVSCOPE_HAVE_CUDA
    namespace cuda = kernels::cuda;
    std::vector<Row> rows;
    try {
        copy_gb_s = cuda::copy_bandwidth(std::size_t{1} << 30, 10) / 1e9;
        for (const KvDtype dtype : dtypes)
            for (const std::uint32_t context : contexts)
                for (const bool paged : {true, false}) {
                    const KvLayout layout({1, s.kv_heads, s.head_dim}, dtype, s.block_size);
                    cuda::DecodeBenchConfig c;
                    c.layout = paged_kv_view(layout, 0, nullptr, 0, nullptr);
                    c.kv_bytes_per_token = layout.bytes_per_token();
                    c.n_heads = s.heads;
                    c.batch = s.batch;
                    c.context = context;
                    c.paged = paged;
                    const cuda::DecodeBenchResult r = cuda::bench_decode_attention(c);
                    rows.push_back({dtype, context, paged, r.seconds_per_call, s.batch * bytes_read(layout, context)});
                }
    } catch (const std::exception& e) {
        throw Error(std::string("bench attention --backend cuda: ") + e.what());
    }
    return rows;
#else
    (void)s, (void)dtypes, (void)contexts, (void)copy_gb_s;
    throw Error("bench attention --backend cuda: built without CUDA");
#endif
}

} // namespace

int run_bench_attention(Args& args) {
    apply_threads(args);
    const std::vector<std::uint32_t> contexts = parse_contexts(args.value_or("--context", "512,2048,8192"));
    const std::vector<KvDtype> dtypes = parse_kv_dtype_list(args.value_or("--kv-dtype", "f16,int8,int4,int4-kivi"));
    const Shape s = read_shape(args);
    const Backend backend = resolve_backend(read_backend(args), detect_device());
    const bool json = args.flag("--json");
    args.finish();

    if (backend == Backend::Cuda) {
        double copy_gb_s = 0;
        const std::vector<Row> rows = cuda_rows(s, dtypes, contexts, copy_gb_s);
        if (json) {
            print_json(rows, s);
        } else {
            print_table(rows, s);
            std::printf("on %s; device-to-device copy (measured): %.1f GB/s\n", device_memory().name.c_str(),
                        copy_gb_s);
        }
        return 0;
    }
    std::vector<Row> rows;
    std::mt19937 rng(7);
    const std::size_t q_floats = std::size_t{s.batch} * s.heads * s.head_dim;
    std::vector<float> q(q_floats), out(q_floats);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (float& x : q)
        x = normal(rng);
    for (const KvDtype dtype : dtypes)
        for (const std::uint32_t context : contexts) {
            Caches paged = make_caches(s, dtype, context, true, rng);
            Caches contiguous = make_caches(s, dtype, context, false, rng);
            fill(paged, s, context);
            fill(contiguous, s, context);
            std::vector<float> scratch(cpu::paged_attention_scratch_floats(context, s.head_dim));
            step(paged, s, context, true, q, out, scratch); // warm up both
            step(contiguous, s, context, false, q, out, scratch);
            std::vector<double> paged_times, contiguous_times;
            for (std::uint32_t r = 0; r < s.repeats; ++r) {
                paged_times.push_back(seconds_per_step(paged, s, context, true, q, out, scratch));
                contiguous_times.push_back(seconds_per_step(contiguous, s, context, false, q, out, scratch));
            }
            const double bytes = s.batch * bytes_read(paged.layout, context);
            rows.push_back({dtype, context, true, median(paged_times), bytes});
            rows.push_back({dtype, context, false, median(contiguous_times), bytes});
        }
    if (json)
        print_json(rows, s);
    else
        print_table(rows, s);
    return 0;
}

} // namespace kvscope::cli
