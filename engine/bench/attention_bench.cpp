#include "engine/bench/attention_bench.h"

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <numeric>
#include <random>
#include <string>

#include "engine/core/error.h"
#include "engine/kv/kv_layout.h"
#include "engine/runtime/paged_kv_view.h"
#include "kernels/cpu/kv_write.h"
#include "kernels/cpu/paged_attention.h"

#ifdef KVSCOPE_HAVE_CUDA
#include "kernels/cuda/attention_bench.h"
#endif

namespace kvscope {
namespace {

namespace cpu = kernels::cpu;
using Shape = AttentionBenchShape;
using Row = AttentionBenchRow;

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

// What each timed call needs besides the caches.
struct Buffers {
    const std::vector<float>& q;
    std::vector<float>& out;
    std::vector<float> scratch;
    int threads;
};

// One step of one layer for the whole batch, one call per sequence on both
// sides, so that the block-table lookup is the only difference between
// them. (The engine's decode runs all its sequences in one call,
// paged_attention_decode_batch; `bench batch` times that, inside whole steps.)
void step(const Caches& c, const Shape& s, std::uint32_t context, bool paged, Buffers& b) {
    const std::size_t q_row = std::size_t{s.queries} * s.heads * s.head_dim;
    for (std::uint32_t i = 0; i < s.batch; ++i) {
        const float* qi = b.q.data() + i * q_row;
        float* oi = b.out.data() + i * q_row;
        const std::byte* tail = c.tails[i].empty() ? nullptr : c.tails[i].data();
        if (paged) {
            cpu::paged_attention(c.kv, c.tables[i], context, qi, s.queries, s.heads, oi, b.scratch, b.threads, tail);
        } else {
            // This sequence's consecutive blocks, from its first one on.
            cpu::PagedKv own = c.kv;
            own.pool += std::size_t{c.tables[i].front()} * c.layout.bytes_per_block();
            own.n_blocks = c.tables[i].size();
            cpu::contiguous_attention(own, context, qi, s.queries, s.heads, oi, b.scratch, b.threads, tail);
        }
    }
}

double seconds_per_step(const Caches& c, const Shape& s, std::uint32_t context, bool paged, Buffers& b) {
    using clock = std::chrono::steady_clock;
    const auto start = clock::now();
    std::size_t calls = 0;
    double elapsed = 0;
    do {
        step(c, s, context, paged, b);
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

} // namespace

std::vector<Row> bench_cpu_attention(const Shape& s, const std::vector<KvDtype>& dtypes,
                                     const std::vector<std::uint32_t>& contexts, int threads) {
    for (const std::uint32_t context : contexts)
        if (context < s.queries)
            throw Error("bench attention: a context of " + std::to_string(context) + " tokens cannot hold " +
                        std::to_string(s.queries) + " queries; lower --queries or raise --context");
    std::vector<Row> rows;
    std::mt19937 rng(7);
    const std::size_t q_floats = std::size_t{s.batch} * s.queries * s.heads * s.head_dim;
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
            Buffers b{q, out, std::vector<float>(cpu::paged_attention_scratch_floats(context, s.head_dim, threads)),
                      threads};
            step(paged, s, context, true, b); // warm up both
            step(contiguous, s, context, false, b);
            std::vector<double> paged_times, contiguous_times;
            for (std::uint32_t r = 0; r < s.repeats; ++r) {
                paged_times.push_back(seconds_per_step(paged, s, context, true, b));
                contiguous_times.push_back(seconds_per_step(contiguous, s, context, false, b));
            }
            const double bytes = s.batch * bytes_read(paged.layout, context);
            rows.push_back({dtype, context, true, median(paged_times), bytes});
            rows.push_back({dtype, context, false, median(contiguous_times), bytes});
        }
    return rows;
}

std::vector<Row> bench_cuda_attention(const Shape& s, const std::vector<KvDtype>& dtypes,
                                      const std::vector<std::uint32_t>& contexts, double& copy_gb_s) {
#ifdef KVSCOPE_HAVE_CUDA
    namespace cuda = kernels::cuda;
    if (s.queries != 1)
        throw Error("bench attention --backend cuda times decode only; drop --queries");
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

} // namespace kvscope
