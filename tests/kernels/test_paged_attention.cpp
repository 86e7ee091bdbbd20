// write_kv + paged_attention against a naive double-precision attention
// over the same K/V laid out contiguously.
//
// The pool is described by KvLayout (the engine's one source of truth for
// addresses) for the middle layer of a three-layer cache, filled with NaN
// bytes first so that reading any row that was not written (another layer,
// a slot past the context, a block not in the table) poisons the result.
// Block tables are random permutations, never consecutive runs.
//
// Error measure: per (query, head) output row, max |out - ref| / max |ref|.
// With f32 KV the only error is float arithmetic: < 1e-5. With f16 KV the
// reference uses the f16-rounded K/V (rounded by kernel_test::f16_round),
// and for the quantized formats the K/V the portable decoder reads back
// from the pool and tail, so the same bound holds.
//
// Prompt chunks (n_q > 1) go through the tiled prompt kernel, decode steps
// through the decode kernel; both against the same reference. The options
// (scale, soft cap, sliding window) against the reference's own
// definitions, with the rows before every query's window never written:
// NaN if read, so a window's keys must be skipped, not just masked. The prompt
// kernel's online softmax adds the exponentials in another order than a
// decode step does, so a prompt's outputs are not bit-identical to those
// of per-token decode steps, only within the bound.
#include <QTest>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>
#include <span>
#include <stdexcept>
#include <vector>

#include "attention_reference.h"
#include "engine/kv/kv_layout.h"
#include "engine/runtime/paged_kv_view.h"
#include "kernel_test_support.h"
#include "kernels/cpu/kv_row_ops.h"
#include "kernels/cpu/kv_write.h"
#include "kernels/cpu/paged_attention.h"

using namespace kvscope::kernels::cpu;
using kvscope::KvDtype;
using kvscope::KvLayout;
using detail::KvRows;
using detail::RowCode;

Q_DECLARE_METATYPE(kvscope::KvDtype)

namespace {

constexpr std::uint32_t kLayers = 3;
constexpr std::uint32_t kLayer = 1;

// `count` distinct block ids below n_blocks in random order, never all
// consecutive.
std::vector<std::uint32_t> random_table(std::size_t count, std::size_t n_blocks, std::mt19937& rng) {
    std::vector<std::uint32_t> ids(n_blocks);
    std::iota(ids.begin(), ids.end(), 0u);
    const auto consecutive = [&] {
        for (std::size_t b = 1; b < count; ++b)
            if (ids[b] != ids[b - 1] + 1)
                return false;
        return true;
    };
    do
        std::shuffle(ids.begin(), ids.end(), rng);
    while (count > 1 && consecutive());
    ids.resize(count);
    return ids;
}

std::vector<float> random_vector(std::size_t n, float scale, std::mt19937& rng) {
    std::uniform_real_distribution<float> uniform(-scale, scale);
    std::vector<float> v(n);
    for (float& x : v)
        x = uniform(rng);
    return v;
}

using Shape = kernel_test::AttentionShape;
using kernel_test::reference_attention;

// A pool holding K/V for positions [0, ctx_len) of one sequence, with the
// fp8 head scales and the KIVI tail where the format has them.
struct Cache {
    KvLayout layout;
    std::vector<std::byte> pool;
    std::vector<std::uint32_t> table;
    std::vector<float> fixed_scales;
    std::vector<std::byte> tail;
    PagedKv kv;
};

Cache make_cache(const Shape& s, KvDtype dtype, std::uint32_t block_size, std::mt19937& rng) {
    Cache c{KvLayout({kLayers, s.n_kv_heads, s.head_dim}, dtype, block_size), {}, {}, {}, {}, {}};
    const std::size_t blocks = c.layout.blocks_for_tokens(s.ctx_len);
    const std::size_t n_blocks = 2 * blocks + 3;
    c.pool.assign(n_blocks * c.layout.bytes_per_block(), std::byte{0xFF}); // NaN in f32 and f16
    c.table = random_table(blocks, n_blocks, rng);
    c.fixed_scales.assign(c.layout.fixed_bytes() / sizeof(float), 0.25f);
    c.tail.assign(c.layout.tail_bytes(), std::byte{0xFF});
    c.kv = kvscope::paged_kv_view(c.layout, kLayer, c.pool.data(), n_blocks,
                                  c.fixed_scales.empty() ? nullptr : c.fixed_scales.data());
    return c;
}

const std::byte* tail_of(const Cache& c) { return c.tail.empty() ? nullptr : c.tail.data(); }

// Positions [first, ctx_len); the rows before `first` keep the pool's NaN
// bytes.
void write_from(Cache& c, const Shape& s, const std::vector<float>& k, const std::vector<float>& v,
                std::uint32_t first) {
    const std::size_t row = std::size_t{s.n_kv_heads} * s.head_dim;
    const std::uint32_t bs = c.layout.block_size();
    for (std::uint32_t p = first; p < s.ctx_len; ++p)
        write_kv(c.kv, c.table[p / bs], p % bs, k.data() + p * row, v.data() + p * row,
                 c.tail.empty() ? nullptr : c.tail.data());
}

void write_all(Cache& c, const Shape& s, const std::vector<float>& k, const std::vector<float>& v) {
    write_from(c, s, k, v, 0);
}

// Worst (query, head) row of max |out - ref| / max |ref|.
double worst_relative_error(const std::vector<float>& out, const std::vector<double>& ref,
                            std::size_t dim) {
    double worst = 0.0;
    for (std::size_t r = 0; r < ref.size(); r += dim) {
        double err = 0.0, size = 0.0;
        for (std::size_t d = r; d < r + dim; ++d) {
            if (std::isnan(out[d])) // an unwritten (NaN-filled) row was read
                return INFINITY;
            err = std::max(err, std::fabs(out[d] - ref[d]));
            size = std::max(size, std::fabs(ref[d]));
        }
        worst = std::max(worst, err / size);
    }
    return worst;
}

std::vector<float> run_attention(const Cache& c, const Shape& s, const std::vector<float>& q, int threads,
                                 const AttentionOptions& options = {}) {
    std::vector<float> out(q.size(), std::nanf(""));
    std::vector<float> scratch(paged_attention_scratch_floats(s.ctx_len, s.head_dim, threads));
    paged_attention(c.kv, c.table, s.ctx_len, q.data(), s.n_q, s.n_heads, out.data(), scratch, threads, tail_of(c),
                    options);
    return out;
}

// The same options for the reference (sinks: n_heads of them).
kernel_test::ReferenceOptions reference_options(const AttentionOptions& options, std::uint32_t n_heads) {
    return {options.scale, options.softcap, options.window,
            options.sinks ? std::vector<double>(options.sinks, options.sinks + n_heads) : std::vector<double>{}};
}

// Attention sinks for n_heads query heads, from below the scores
// (q ~ U(-3, 3), k ~ U(-1, 1), head_dim 64: scores of RMS ~1, each query's
// softmax sum ~1e2 times its max term) to above them: a sink from barely
// changing its head's output to taking nearly all of its weight, and head
// 0's of 30, far above every score, where the output is e^-25 of the
// values but still relative-error checked.
std::vector<float> random_sinks(std::uint32_t n_heads, std::mt19937& rng) {
    std::vector<float> sinks = random_vector(n_heads, 4.0f, rng);
    for (float& x : sinks)
        x += 3.0f;
    sinks[0] = 30.0f;
    return sinks;
}


// Value i of a row through the portable decoder (kv_codes.h), the one
// definition of each format, chosen at run time.
double decoded_value(RowCode code, const std::byte* row, const std::byte* scales, std::size_t i, std::size_t n) {
    switch (code) {
    case RowCode::F32: return detail::decode_value<RowCode::F32>(row, scales, i, n);
    case RowCode::F16: return detail::decode_value<RowCode::F16>(row, scales, i, n);
    case RowCode::BF16: return detail::decode_value<RowCode::BF16>(row, scales, i, n);
    case RowCode::Fp8: return detail::decode_value<RowCode::Fp8>(row, scales, i, n);
    case RowCode::Int8: return detail::decode_value<RowCode::Int8>(row, scales, i, n);
    case RowCode::Int4Groups: return detail::decode_value<RowCode::Int4Groups>(row, scales, i, n);
    case RowCode::Int2Groups: return detail::decode_value<RowCode::Int2Groups>(row, scales, i, n);
    case RowCode::Int4Channels: return detail::decode_value<RowCode::Int4Channels>(row, scales, i, n);
    case RowCode::Int2Channels: return detail::decode_value<RowCode::Int2Channels>(row, scales, i, n);
    }
    return NAN;
}

// Rows [first, first + count) of one full block of K or V (kv head 0), as
// paged_attention hands them to the row operations.
struct BlockPart {
    const std::byte* rows;
    std::size_t stride;
    const std::byte* scales;
    std::size_t scale_stride;
    RowCode code;

    KvRows run(std::size_t first, std::size_t count) const {
        return {rows + first * stride, stride, scales + first * scale_stride, scale_stride, count};
    }
    std::vector<double> values(std::size_t r, std::size_t n) const {
        std::vector<double> x(n);
        for (std::size_t i = 0; i < n; ++i)
            x[i] = decoded_value(code, rows + r * stride, scales + r * scale_stride, i, n);
        return x;
    }
};

BlockPart block_part(const PagedKv& kv, bool keys) {
    const std::byte* block = kv.pool;
    if (kv.elem == KvElem::Fp8E4M3) {
        const float* scale = kv.fixed_scales + (keys ? 0 : kv.n_kv_heads);
        return {block + (keys ? kv.k_offset : kv.v_offset), kv.slot_stride, reinterpret_cast<const std::byte*>(scale),
                0, keys ? detail::k_row_code(kv.elem) : detail::v_row_code(kv.elem)};
    }
    const KvScaleRegion& scale = keys ? kv.k_scale : kv.v_scale;
    return {block + (keys ? kv.k_offset : kv.v_offset), kv.slot_stride, block + scale.offset, scale.slot_stride,
            keys ? detail::k_row_code(kv.elem) : detail::v_row_code(kv.elem)};
}

bool same_bits(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; }

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// The K (or V) values the cache holds, [position][kv_head][dim], read back
// with the portable decoder at the addresses paged_kv.h documents: pool
// rows through the table, KIVI positions past the last full block from
// the f16 tail.
std::vector<float> stored_values(const PagedKv& kv, std::span<const std::uint32_t> table, const std::byte* tail,
                                 const Shape& s, bool keys) {
    const RowCode code = keys ? detail::k_row_code(kv.elem) : detail::v_row_code(kv.elem);
    const KvScaleRegion& scale = keys ? kv.k_scale : kv.v_scale;
    const std::uint32_t bs = kv.block_size;
    const std::uint32_t sealed = kv_elem_seals_blocks(kv.elem) ? s.ctx_len / bs * bs : s.ctx_len;
    std::vector<float> x(std::size_t{s.ctx_len} * s.n_kv_heads * s.head_dim);
    for (std::uint32_t p = 0; p < s.ctx_len; ++p)
        for (std::uint32_t h = 0; h < s.n_kv_heads; ++h) {
            float* values = x.data() + (std::size_t{p} * s.n_kv_heads + h) * s.head_dim;
            if (p >= sealed) {
                const std::byte* row = tail + (keys ? kv.tail.k_offset : kv.tail.v_offset) +
                                       h * kv.tail.head_stride + (p - sealed) * kv.tail.slot_stride;
                for (std::uint32_t d = 0; d < s.head_dim; ++d)
                    values[d] = static_cast<float>(decoded_value(RowCode::F16, row, nullptr, d, s.head_dim));
                continue;
            }
            const std::byte* block = kv.pool + std::size_t{table[p / bs]} * kv.bytes_per_block;
            const std::byte* row = block + (keys ? kv.k_offset : kv.v_offset) + h * kv.head_stride + p % bs * kv.slot_stride;
            const std::byte* scales =
                kv.elem == KvElem::Fp8E4M3
                    ? reinterpret_cast<const std::byte*>(kv.fixed_scales + (keys ? 0 : kv.n_kv_heads) + h)
                    : block + scale.offset + h * scale.head_stride + p % bs * scale.slot_stride;
            for (std::uint32_t d = 0; d < s.head_dim; ++d)
                values[d] = static_cast<float>(decoded_value(code, row, scales, d, s.head_dim));
        }
    return x;
}

// Several sequences' K/V in one pool: block tables drawn from one random
// permutation (disjoint, never consecutive runs), a KIVI tail each.
struct SharedCache {
    KvLayout layout;
    std::vector<std::byte> pool;
    std::vector<float> fixed_scales;
    std::vector<std::vector<std::uint32_t>> tables;
    std::vector<std::vector<std::byte>> tails;
    PagedKv kv;

    const std::byte* tail(std::size_t seq) const { return tails[seq].empty() ? nullptr : tails[seq].data(); }
};

SharedCache make_shared_cache(std::uint32_t n_kv_heads, std::uint32_t head_dim, KvDtype dtype,
                              std::uint32_t block_size, const std::vector<std::uint32_t>& contexts,
                              std::mt19937& rng) {
    SharedCache c{KvLayout({kLayers, n_kv_heads, head_dim}, dtype, block_size), {}, {}, {}, {}, {}};
    std::size_t blocks = 0;
    for (const std::uint32_t ctx : contexts)
        blocks += c.layout.blocks_for_tokens(ctx);
    const std::size_t n_blocks = blocks + 3;
    const std::vector<std::uint32_t> ids = random_table(n_blocks, n_blocks, rng);
    c.pool.assign(n_blocks * c.layout.bytes_per_block(), std::byte{0xFF});
    c.fixed_scales.assign(c.layout.fixed_bytes() / sizeof(float), 0.25f);
    c.kv = kvscope::paged_kv_view(c.layout, kLayer, c.pool.data(), n_blocks,
                                  c.fixed_scales.empty() ? nullptr : c.fixed_scales.data());
    std::size_t next = 0;
    const std::size_t row = std::size_t{n_kv_heads} * head_dim;
    for (const std::uint32_t ctx : contexts) {
        const std::size_t count = c.layout.blocks_for_tokens(ctx);
        c.tables.emplace_back(ids.begin() + static_cast<std::ptrdiff_t>(next),
                              ids.begin() + static_cast<std::ptrdiff_t>(next + count));
        next += count;
        c.tails.emplace_back(c.layout.tail_bytes(), std::byte{0xFF});
        const std::vector<float> k = random_vector(ctx * row, 1.0f, rng), v = random_vector(ctx * row, 1.0f, rng);
        for (std::uint32_t p = 0; p < ctx; ++p)
            write_kv(c.kv, c.tables.back()[p / block_size], p % block_size, k.data() + p * row, v.data() + p * row,
                     c.tails.back().empty() ? nullptr : c.tails.back().data());
    }
    return c;
}

// paged_attention_decode_batch over the sequences `which` of the cache
// (queries and outputs: n_heads x head_dim floats per sequence, indexed
// as the cache's sequences).
std::vector<std::vector<float>> run_decode_batch(const SharedCache& c, const std::vector<std::uint32_t>& contexts,
                                                 const std::vector<std::vector<float>>& q, std::uint32_t n_heads,
                                                 const std::vector<std::size_t>& which, int threads,
                                                 const AttentionOptions& options) {
    std::vector<std::vector<float>> out(contexts.size());
    std::vector<DecodeSeq> seqs;
    std::uint32_t longest = 0;
    for (const std::size_t i : which) {
        out[i].assign(q[i].size(), std::nanf(""));
        seqs.push_back({c.tables[i], contexts[i], q[i].data(), out[i].data(), c.tail(i)});
        longest = std::max(longest, contexts[i]);
    }
    std::vector<float> scratch(paged_attention_scratch_floats(longest, c.kv.head_dim, threads));
    paged_attention_decode_batch(c.kv, seqs, n_heads, scratch, threads, options);
    return out;
}
} // namespace

class TestPagedAttention : public QObject {
    Q_OBJECT
private slots:
    void matches_double_reference_data();
    void matches_double_reference();
    void prompt_tiles_match_double_reference_data();
    void prompt_tiles_match_double_reference();
    void options_match_double_reference_data();
    void options_match_double_reference();
    void prompt_rows_do_not_depend_on_the_split_data();
    void prompt_rows_do_not_depend_on_the_split();
    void decode_batch_matches_single_sequences_data();
    void decode_batch_matches_single_sequences();
    void row_runs_match_single_rows_data();
    void row_runs_match_single_rows();
    void writes_where_kv_layout_says();
    void rejects_bad_arguments();
};

void TestPagedAttention::matches_double_reference_data() {
    QTest::addColumn<KvDtype>("dtype");
    QTest::addColumn<int>("n_kv_heads");
    QTest::addColumn<int>("group");
    QTest::addColumn<int>("head_dim");
    QTest::addColumn<int>("block_size");
    QTest::addColumn<int>("ctx_len");
    QTest::addColumn<int>("n_q");
    struct Case {
        const char* name;
        int n_kv_heads, group, head_dim, block_size, ctx_len, n_q;
    };
    // Context lengths end mid-block unless the name says otherwise.
    const Case cases[] = {
        {"decode gqa1 d64 b16", 4, 1, 64, 16, 37, 1},
        {"decode gqa2 d128 b32", 2, 2, 128, 32, 70, 1},
        {"decode gqa4 d8 b8", 2, 4, 8, 8, 29, 1},
        {"decode gqa8 d64 b16", 1, 8, 64, 16, 100, 1},
        {"decode long gqa4 d128 b16", 2, 4, 128, 16, 613, 1},
        {"decode first token", 1, 2, 8, 8, 1, 1},
        {"decode gqa3 d36 b16", 2, 3, 36, 16, 53, 1},
        {"prefill after prefix gqa2 d20 b8", 1, 2, 20, 8, 30, 9},
        {"prefill after prefix gqa1 d8 b8", 3, 1, 8, 8, 45, 13},
        {"prefill after prefix gqa2 d64 b16", 2, 2, 64, 16, 83, 30},
        {"prefill from empty gqa4 d128 b32", 2, 4, 128, 32, 77, 77},
        {"prefill after prefix gqa8 d64 b8", 1, 8, 64, 8, 66, 19},
        {"prefill whole blocks gqa2 d64 b16", 2, 2, 64, 16, 64, 16},
    };
    for (const KvDtype dtype : {KvDtype::F32, KvDtype::F16})
        for (const Case& c : cases)
            QTest::addRow("%s %s", c.name, dtype == KvDtype::F16 ? "f16" : "f32")
                << dtype << c.n_kv_heads << c.group << c.head_dim << c.block_size << c.ctx_len << c.n_q;
}

void TestPagedAttention::matches_double_reference() {
    QFETCH(KvDtype, dtype);
    QFETCH(int, n_kv_heads);
    QFETCH(int, group);
    QFETCH(int, head_dim);
    QFETCH(int, block_size);
    QFETCH(int, ctx_len);
    QFETCH(int, n_q);
    const Shape s{static_cast<std::uint32_t>(n_kv_heads), static_cast<std::uint32_t>(n_kv_heads * group),
                  static_cast<std::uint32_t>(head_dim), static_cast<std::uint32_t>(ctx_len),
                  static_cast<std::uint32_t>(n_q)};
    std::mt19937 rng(static_cast<unsigned>(ctx_len * 131 + head_dim));
    Cache cache = make_cache(s, dtype, static_cast<std::uint32_t>(block_size), rng);

    const std::size_t kv_values = std::size_t{s.ctx_len} * s.n_kv_heads * s.head_dim;
    std::vector<float> k = random_vector(kv_values, 1.0f, rng);
    std::vector<float> v = random_vector(kv_values, 1.0f, rng);
    // Queries large enough that the softmax is far from uniform.
    const std::vector<float> q = random_vector(std::size_t{s.n_q} * s.n_heads * s.head_dim, 3.0f, rng);
    write_all(cache, s, k, v);
    if (dtype == KvDtype::F16)
        for (std::vector<float>* values : {&k, &v})
            for (float& x : *values)
                x = kernel_test::f16_round(x);
    const std::vector<double> ref = reference_attention(s, q, k, v);

    for (const SimdPath path : kernel_test::available_paths()) {
        kernel_test::PathScope scope(path);
        const std::vector<float> one = run_attention(cache, s, q, 1);
        const std::vector<float> two = run_attention(cache, s, q, 2);
        const std::vector<float> five = run_attention(cache, s, q, 5); // more threads than this machine's cores
        const double error = worst_relative_error(two, ref, s.head_dim);
        QVERIFY2(error < 1e-5, qPrintable(QStringLiteral("%1 path: relative error %2")
                                              .arg(to_string(path)).arg(error, 0, 'g', 3)));
        // Each output row is computed whole by one thread.
        QVERIFY(one == two);
        QVERIFY(one == five);
    }
}

// The prompt kernel (n_q > 1) for every KV format: chunks of 2, 17, 64 and
// 200 queries after 21 cached tokens (contexts ending mid-block, so KIVI
// reads its tail), grouped-query ratios 1 and 4, blocks of 16 and 32, head
// dims 64 and (for 17 queries) 36, on 1 and 2 threads, bit-identical
// between them. Tiles hold up to 32 query rows and chunks 32 keys, so 100
// queries span several tiles and chunks, 2 and 17 part of one.
void TestPagedAttention::prompt_tiles_match_double_reference_data() {
    QTest::addColumn<KvDtype>("dtype");
    QTest::addColumn<int>("group");
    QTest::addColumn<int>("block_size");
    QTest::addColumn<int>("n_q");
    for (const KvDtype dtype : kvscope::all_kv_dtypes())
        for (const int n_q : {2, 17, 64, 100})
            for (const int group : {1, 4})
                for (const int block_size : {16, 32})
                    if (block_size == 16 || n_q == 100) // 32: where the walk crosses several blocks
                        QTest::addRow("%s q%d gqa%d b%d", to_string(dtype).data(), n_q, group, block_size)
                            << dtype << group << block_size << n_q;
}

void TestPagedAttention::prompt_tiles_match_double_reference() {
    QFETCH(KvDtype, dtype);
    QFETCH(int, group);
    QFETCH(int, block_size);
    QFETCH(int, n_q);
    constexpr std::uint32_t kCached = 21;
    const std::uint32_t n_kv_heads = 2, head_dim = n_q == 17 ? 36 : 64;
    const Shape s{n_kv_heads, n_kv_heads * static_cast<std::uint32_t>(group), head_dim,
                  static_cast<std::uint32_t>(n_q) + kCached, static_cast<std::uint32_t>(n_q)};
    std::mt19937 rng(static_cast<unsigned>(n_q * 7 + group * 3 + block_size) + static_cast<unsigned>(dtype));
    Cache cache = make_cache(s, dtype, static_cast<std::uint32_t>(block_size), rng);
    const std::size_t kv_values = std::size_t{s.ctx_len} * s.n_kv_heads * s.head_dim;
    write_all(cache, s, random_vector(kv_values, 1.0f, rng), random_vector(kv_values, 1.0f, rng));
    const std::vector<float> q = random_vector(std::size_t{s.n_q} * s.n_heads * s.head_dim, 3.0f, rng);
    const std::vector<double> ref =
        reference_attention(s, q, stored_values(cache.kv, cache.table, tail_of(cache), s, true),
                            stored_values(cache.kv, cache.table, tail_of(cache), s, false));

    for (const SimdPath path : kernel_test::available_paths()) {
        kernel_test::PathScope scope(path);
        const std::vector<float> one = run_attention(cache, s, q, 1);
        const std::vector<float> two = run_attention(cache, s, q, 2);
        const double error = worst_relative_error(two, ref, s.head_dim);
        QVERIFY2(error < 1e-5, qPrintable(QStringLiteral("%1 path: relative error %2")
                                              .arg(to_string(path)).arg(error, 0, 'g', 3)));
        QVERIFY(same_bits(one, two));
    }
}

// AttentionOptions for every KV format, decode steps and prompt chunks:
// windows shorter than a tile's queries, not a multiple of the block size
// or the tile, as long as the context, longer, and 1 (each query sees
// itself alone); a soft cap that saturates; a scale other than
// 1 / sqrt(head_dim); grouped-query ratios 1 and 4; contexts ending
// mid-block (KIVI reads its tail); Gemma 2's regime (no QK-norm: scores
// of RMS ~20 under a cap of 50, each query's softmax dominated by a few
// keys), where an error in a score moves the output ~10x more than in the
// rows above (Q rounded to f16: relative error ~3e-3 there, ~3e-4 above),
// and where logits differ most from an engine that rounds one operand
// (llama.cpp's F16 matmul rounds the input of the K projection to f16:
// its Gemma 2 logits are ~3x further from a float64 forward pass than
// ours). A tile's 32 queries with a window of 5
// or 45 span two or three chunks, the later ones wholly masked for its
// first rows. Positions before the first query's window are never written
// (NaN, or for KIVI the whole blocks before it), so reading them shows.
// Against the double reference over the values stored, on every SIMD
// path, 1 and 2 threads bit-identical.
void TestPagedAttention::options_match_double_reference_data() {
    QTest::addColumn<KvDtype>("dtype");
    QTest::addColumn<int>("group");
    QTest::addColumn<int>("block_size");
    QTest::addColumn<int>("ctx_len");
    QTest::addColumn<int>("n_q");
    QTest::addColumn<float>("scale");
    QTest::addColumn<float>("softcap");
    QTest::addColumn<int>("window");
    QTest::addColumn<bool>("sinks");
    struct Case {
        const char* name;
        int group, block_size, ctx_len, n_q;
        float scale, softcap;
        int window;
        bool sinks = false;
    };
    const Case cases[] = {
        {"decode w7", 1, 16, 83, 1, 0.0f, 0.0f, 7},
        {"decode w40 gqa4", 4, 16, 150, 1, 0.0f, 0.0f, 40},
        {"decode w=ctx gqa4", 4, 16, 37, 1, 0.0f, 0.0f, 37},
        {"decode w>ctx", 1, 32, 37, 1, 0.0f, 0.0f, 100},
        {"decode w1", 4, 16, 50, 1, 0.0f, 0.0f, 1},
        {"decode softcap scale gqa4", 4, 16, 70, 1, 0.2f, 2.0f, 0},
        {"decode all three", 1, 32, 99, 1, 0.1f, 5.0f, 13},
        {"prompt w5 gqa4", 4, 16, 85, 64, 0.0f, 0.0f, 5},
        {"prompt w5", 1, 16, 85, 64, 0.0f, 0.0f, 5},
        {"prompt w45", 1, 16, 121, 100, 0.0f, 0.0f, 45},
        {"prompt w20 from empty gqa4 b32", 4, 32, 70, 70, 0.0f, 0.0f, 20},
        {"prompt w>ctx", 1, 16, 40, 17, 0.0f, 0.0f, 200},
        {"prompt w1 gqa4", 4, 16, 30, 20, 0.0f, 0.0f, 1},
        {"prompt softcap scale gqa4", 4, 16, 60, 40, 0.2f, 2.0f, 0},
        {"prompt all three b32", 1, 32, 140, 100, 0.15f, 8.0f, 33},
        {"prompt scale", 1, 16, 50, 30, 0.05f, 0.0f, 0},
        {"decode gemma2 scores gqa2", 2, 16, 300, 1, 2.5f, 50.0f, 128},
        {"prompt gemma2 scores gqa2", 2, 16, 300, 200, 2.5f, 50.0f, 0},
        {"decode sinks one span", 1, 16, 20, 1, 0.0f, 0.0f, 0, true},
        {"decode sinks gqa8 two spans", 8, 16, 18, 1, 0.0f, 0.0f, 0, true},
        {"decode sinks gqa8 w128", 8, 16, 300, 1, 0.0f, 0.0f, 128, true},
        {"decode sinks gqa4", 4, 16, 150, 1, 0.0f, 0.0f, 0, true},
        {"decode sinks w40", 1, 16, 150, 1, 0.0f, 0.0f, 40, true},
        {"decode sinks softcap scale w13 b32", 4, 32, 99, 1, 0.1f, 5.0f, 13, true},
        {"prompt sinks gqa4", 4, 16, 85, 64, 0.0f, 0.0f, 0, true},
        {"prompt sinks w20 b32", 1, 32, 121, 100, 0.0f, 0.0f, 20, true},
        {"prompt sinks softcap scale w5 gqa4", 4, 16, 60, 40, 0.2f, 2.0f, 5, true},
    };
    for (const KvDtype dtype : kvscope::all_kv_dtypes())
        for (const Case& c : cases)
            QTest::addRow("%s %s", c.name, to_string(dtype).data()) << dtype << c.group << c.block_size << c.ctx_len
                                                                     << c.n_q << c.scale << c.softcap << c.window
                                                                     << c.sinks;
}

void TestPagedAttention::options_match_double_reference() {
    QFETCH(KvDtype, dtype);
    QFETCH(int, group);
    QFETCH(int, block_size);
    QFETCH(int, ctx_len);
    QFETCH(int, n_q);
    QFETCH(float, scale);
    QFETCH(float, softcap);
    QFETCH(int, window);
    QFETCH(bool, sinks);
    const std::uint32_t n_kv_heads = 2, head_dim = 64;
    const Shape s{n_kv_heads, n_kv_heads * static_cast<std::uint32_t>(group), head_dim,
                  static_cast<std::uint32_t>(ctx_len), static_cast<std::uint32_t>(n_q)};
    std::mt19937 rng(static_cast<unsigned>(ctx_len * 13 + n_q * 5 + window) + static_cast<unsigned>(dtype));
    const std::vector<float> head_sinks = sinks ? random_sinks(s.n_heads, rng) : std::vector<float>{};
    const AttentionOptions options{scale, softcap, static_cast<std::uint32_t>(window),
                                   sinks ? head_sinks.data() : nullptr};
    Cache cache = make_cache(s, dtype, static_cast<std::uint32_t>(block_size), rng);
    const std::uint32_t earliest = s.ctx_len - s.n_q; // the first query's position
    std::uint32_t unseen = options.window > 0 && earliest >= options.window ? earliest + 1 - options.window : 0;
    if (kvscope::seals_blocks(dtype)) // a block is sealed from all its slots
        unseen = unseen / cache.layout.block_size() * cache.layout.block_size();
    const std::size_t kv_values = std::size_t{s.ctx_len} * s.n_kv_heads * s.head_dim;
    write_from(cache, s, random_vector(kv_values, 1.0f, rng), random_vector(kv_values, 1.0f, rng), unseen);
    const std::vector<float> q = random_vector(std::size_t{s.n_q} * s.n_heads * s.head_dim, 3.0f, rng);
    const std::vector<double> ref =
        reference_attention(s, q, stored_values(cache.kv, cache.table, tail_of(cache), s, true),
                            stored_values(cache.kv, cache.table, tail_of(cache), s, false),
                            reference_options(options, s.n_heads));

    for (const SimdPath path : kernel_test::available_paths()) {
        kernel_test::PathScope scope(path);
        const std::vector<float> one = run_attention(cache, s, q, 1, options);
        const std::vector<float> two = run_attention(cache, s, q, 2, options);
        const double error = worst_relative_error(two, ref, s.head_dim);
        QVERIFY2(error < 1e-5, qPrintable(QStringLiteral("%1 path: relative error %2")
                                              .arg(to_string(path)).arg(error, 0, 'g', 3)));
        QVERIFY(same_bits(one, two));
    }
}

// A prompt's query rows come out the same bits however the prompt is cut
// into chunks (the engine cuts it by its token budget and by what else is
// in the step): its key chunks end at fixed positions, so each row adds its
// keys in the same groups. With and without a window (one of 20 starts
// mid-chunk, one of 45 spans two), with and without sinks, on every SIMD
// path. KIVI is left out: a sealed block's rows are quantized where a
// tail's are f16, so its values themselves depend on where the prompt was
// cut.
void TestPagedAttention::prompt_rows_do_not_depend_on_the_split_data() {
    QTest::addColumn<KvDtype>("dtype");
    QTest::addColumn<int>("window");
    QTest::addColumn<bool>("sinks");
    for (const KvDtype dtype : {KvDtype::F32, KvDtype::F16, KvDtype::Int8, KvDtype::Fp8E4M3})
        for (const int window : {0, 20, 45})
            for (const bool sinks : {false, true})
                if (!sinks || window != 20)
                    QTest::addRow("%s window %d%s", to_string(dtype).data(), window, sinks ? " sinks" : "")
                        << dtype << window << sinks;
}

void TestPagedAttention::prompt_rows_do_not_depend_on_the_split() {
    QFETCH(KvDtype, dtype);
    QFETCH(int, window);
    QFETCH(bool, sinks);
    const std::uint32_t n_kv_heads = 2, n_heads = 4, head_dim = 64, ctx = 150;
    std::mt19937 rng(static_cast<unsigned>(window) * 7 + static_cast<unsigned>(dtype));
    const std::vector<float> head_sinks = random_sinks(n_heads, rng);
    const AttentionOptions options{0.0f, 0.0f, static_cast<std::uint32_t>(window),
                                   sinks ? head_sinks.data() : nullptr};
    const Shape whole{n_kv_heads, n_heads, head_dim, ctx, ctx};
    Cache cache = make_cache(whole, dtype, 16, rng);
    const std::size_t kv_values = std::size_t{ctx} * n_kv_heads * head_dim;
    write_all(cache, whole, random_vector(kv_values, 1.0f, rng), random_vector(kv_values, 1.0f, rng));
    const std::size_t row = std::size_t{n_heads} * head_dim;
    const std::vector<float> q = random_vector(ctx * row, 3.0f, rng);
    const std::vector<std::vector<std::uint32_t>> splits = {{0, 37, 100, 150}, {0, 5, 69, 71, 150}, {0, 96, 150}};

    for (const SimdPath path : kernel_test::available_paths()) {
        kernel_test::PathScope scope(path);
        const std::vector<float> at_once = run_attention(cache, whole, q, 2, options);
        for (const auto& cuts : splits)
            for (std::size_t c = 0; c + 1 < cuts.size(); ++c) {
                const Shape part{n_kv_heads, n_heads, head_dim, cuts[c + 1], cuts[c + 1] - cuts[c]};
                const std::vector<float> part_q(q.begin() + cuts[c] * row, q.begin() + cuts[c + 1] * row);
                const std::vector<float> out = run_attention(cache, part, part_q, 2, options);
                const std::vector<float> same(at_once.begin() + cuts[c] * row, at_once.begin() + cuts[c + 1] * row);
                QVERIFY2(same_bits(out, same), qPrintable(QStringLiteral("%1 path, queries %2..%3")
                                                              .arg(to_string(path)).arg(cuts[c]).arg(cuts[c + 1])));
            }
    }
}

// paged_attention_decode_batch for every KV format, grouped-query ratios
// 1 and 4: sequences of mixed contexts in one pool (first token, whole
// blocks, partial last blocks: KIVI reads their tails), each output
// bit-identical to paged_attention's for the sequence alone, whatever the
// batch (all, every other one, each alone) and on 1 and 2 threads, and
// within the decode bound of the double reference. Also with options: a
// window of 20 (inside a block of 16 for some sequences, longer than the
// context for others), a soft cap, a scale and sinks.
void TestPagedAttention::decode_batch_matches_single_sequences_data() {
    QTest::addColumn<KvDtype>("dtype");
    QTest::addColumn<int>("group");
    QTest::addColumn<bool>("with_options");
    for (const KvDtype dtype : kvscope::all_kv_dtypes())
        for (const int group : {1, 4})
            for (const bool with_options : {false, true})
                QTest::addRow("%s gqa%d%s", to_string(dtype).data(), group, with_options ? " options" : "")
                    << dtype << group << with_options;
}

void TestPagedAttention::decode_batch_matches_single_sequences() {
    QFETCH(KvDtype, dtype);
    QFETCH(int, group);
    QFETCH(bool, with_options);
    const std::uint32_t n_kv_heads = 2, head_dim = 64, block_size = 16;
    const std::uint32_t n_heads = n_kv_heads * static_cast<std::uint32_t>(group);
    const std::vector<std::uint32_t> contexts = {37, 1, 130, 64, 16, 5, 99};
    std::mt19937 rng(static_cast<unsigned>(group) * 29 + static_cast<unsigned>(dtype));
    const std::vector<float> sinks = random_sinks(n_heads, rng);
    const AttentionOptions options =
        with_options ? AttentionOptions{0.1f, 4.0f, 20, sinks.data()} : AttentionOptions{};
    const SharedCache cache = make_shared_cache(n_kv_heads, head_dim, dtype, block_size, contexts, rng);
    std::vector<std::vector<float>> q;
    for (std::size_t i = 0; i < contexts.size(); ++i)
        q.push_back(random_vector(std::size_t{n_heads} * head_dim, 3.0f, rng));
    std::vector<std::size_t> all(contexts.size()), every_other;
    std::iota(all.begin(), all.end(), std::size_t{0});
    for (std::size_t i = 0; i < contexts.size(); i += 2)
        every_other.push_back(i);

    for (const SimdPath path : kernel_test::available_paths()) {
        kernel_test::PathScope scope(path);
        const auto batch_one = run_decode_batch(cache, contexts, q, n_heads, all, 1, options);
        const auto batch_two = run_decode_batch(cache, contexts, q, n_heads, all, 2, options);
        const auto some = run_decode_batch(cache, contexts, q, n_heads, every_other, 2, options);
        for (std::size_t i = 0; i < contexts.size(); ++i) {
            const QString where = QStringLiteral("%1 path, sequence %2 (context %3)")
                                      .arg(to_string(path)).arg(i).arg(contexts[i]);
            const Shape s{n_kv_heads, n_heads, head_dim, contexts[i], 1};
            std::vector<float> alone(q[i].size(), std::nanf(""));
            std::vector<float> scratch(paged_attention_scratch_floats(s.ctx_len, head_dim, 2));
            paged_attention(cache.kv, cache.tables[i], s.ctx_len, q[i].data(), 1, n_heads, alone.data(), scratch, 2,
                            cache.tail(i), options);
            QVERIFY2(same_bits(batch_one[i], alone), qPrintable(where));
            QVERIFY2(same_bits(batch_two[i], alone), qPrintable(where));
            QVERIFY2(same_bits(run_decode_batch(cache, contexts, q, n_heads, {i}, 1, options)[i], alone),
                     qPrintable(where));
            if (i % 2 == 0)
                QVERIFY2(same_bits(some[i], alone), qPrintable(where));
            const std::vector<double> ref =
                reference_attention(s, q[i], stored_values(cache.kv, cache.tables[i], cache.tail(i), s, true),
                                    stored_values(cache.kv, cache.tables[i], cache.tail(i), s, false),
                                    reference_options(options, n_heads));
            const double error = worst_relative_error(batch_two[i], ref, head_dim);
            QVERIFY2(error < 1e-5, qPrintable(where + QStringLiteral(": relative error %1").arg(error, 0, 'g', 3)));
        }
    }
}

// The block-wise row operations (kv_row_ops.h), for every KV format, 1..4
// heads and every run length of a block, against the same rows taken one
// at a time (bit-identical: a score may not depend on where a block ends
// or how rows are grouped inside the kernel), and those against a double
// sum over the portable decoder's values (float summation error only:
// 1e-5 of the sum of |terms| covers head_dim 128). Head dims with and
// without a head_dim % 8 remainder, and across int4 groups.
void TestPagedAttention::row_runs_match_single_rows_data() {
    QTest::addColumn<KvDtype>("dtype");
    QTest::addColumn<int>("head_dim");
    for (const KvDtype dtype : kvscope::all_kv_dtypes())
        for (const int head_dim : {8, 36, 72, 128})
            QTest::addRow("%s d%d", to_string(dtype).data(), head_dim) << dtype << head_dim;
}

void TestPagedAttention::row_runs_match_single_rows() {
    QFETCH(KvDtype, dtype);
    QFETCH(int, head_dim);
    constexpr std::uint32_t kBlock = 16;
    const auto n = static_cast<std::size_t>(head_dim);
    const KvLayout layout({1, 1, static_cast<std::uint32_t>(head_dim)}, dtype, kBlock);
    std::vector<std::byte> pool(layout.bytes_per_block(), std::byte{0xFF});
    std::vector<std::byte> tail(layout.tail_bytes(), std::byte{0xFF});
    const std::vector<float> fixed_scales(layout.fixed_bytes() / 4, 0.05f);
    const PagedKv kv = kvscope::paged_kv_view(layout, 0, pool.data(), 1, fixed_scales.empty() ? nullptr : fixed_scales.data());
    std::mt19937 rng(static_cast<unsigned>(head_dim) * 17 + static_cast<unsigned>(dtype));
    for (std::uint32_t slot = 0; slot < kBlock; ++slot) // KIVI: through the tail, sealed by the last slot
        write_kv(kv, 0, slot, random_vector(n, 2.0f, rng).data(), random_vector(n, 2.0f, rng).data(), tail.data());

    constexpr std::size_t kOutStride = kBlock + 3;
    for (const bool keys : {true, false}) {
        const BlockPart part = block_part(kv, keys);
        std::vector<std::vector<double>> x(kBlock);
        for (std::size_t r = 0; r < kBlock; ++r)
            x[r] = part.values(r, n);
        for (const SimdPath path : kernel_test::available_paths()) {
            const detail::KvRowOps ops = detail::kv_row_ops(part.code, path);
            for (std::size_t heads = 1; heads <= detail::kSharedHeads; ++heads) {
                const std::vector<float> q = random_vector(heads * n, 1.0f, rng);
                const std::vector<float> w = random_vector(heads * kBlock, 1.0f, rng);
                const std::vector<float> acc0 = random_vector(heads * n, 1.0f, rng);
                for (std::size_t count = 1; count <= kBlock; ++count) {
                    const QString where = QStringLiteral("%1 path, %2, %3 heads, %4 rows")
                                              .arg(to_string(path)).arg(keys ? "K" : "V").arg(heads).arg(count);
                    std::vector<float> dots(heads * kOutStride, NAN);
                    ops.dot[heads - 1](q.data(), part.run(0, count), n, dots.data(), kOutStride);
                    std::vector<float> acc = acc0, acc_by_row = acc0;
                    ops.axpy[heads - 1](w.data(), kBlock, part.run(0, count), acc.data(), n);
                    for (std::size_t r = 0; r < count; ++r) {
                        float single[detail::kSharedHeads];
                        ops.dot[heads - 1](q.data(), part.run(r, 1), n, single, 1);
                        ops.axpy[heads - 1](w.data() + r, kBlock, part.run(r, 1), acc_by_row.data(), n);
                        for (std::size_t h = 0; h < heads; ++h) {
                            QVERIFY2(same_bits(dots[h * kOutStride + r], single[h]), qPrintable(where));
                            double ref = 0.0, magnitude = 0.0;
                            for (std::size_t i = 0; i < n; ++i) {
                                ref += double{q[h * n + i]} * x[r][i];
                                magnitude += std::fabs(double{q[h * n + i]} * x[r][i]);
                            }
                            QVERIFY2(std::fabs(single[h] - ref) <= 1e-5 * magnitude, qPrintable(where));
                        }
                    }
                    for (std::size_t h = 0; h < heads; ++h) // nothing written past the run
                        QVERIFY2(std::isnan(dots[h * kOutStride + count]), qPrintable(where));
                    // decode: the portable decoder's values (AVX2 fuses an
                    // affine decode's multiply and add: an ulp apart).
                    std::vector<float> decoded(count * (n + 1), NAN);
                    ops.decode(part.run(0, count), n, decoded.data(), n + 1);
                    for (std::size_t r = 0; r < count; ++r) {
                        for (std::size_t i = 0; i < n; ++i)
                            QVERIFY2(std::fabs(decoded[r * (n + 1) + i] - x[r][i]) <= 1e-6 * (1.0 + std::fabs(x[r][i])),
                                     qPrintable(where));
                        QVERIFY2(std::isnan(decoded[r * (n + 1) + n]), qPrintable(where));
                    }
                    for (std::size_t j = 0; j < acc.size(); ++j)
                        QVERIFY2(same_bits(acc[j], acc_by_row[j]), qPrintable(where));
                    for (std::size_t h = 0; h < heads; ++h)
                        for (std::size_t i = 0; i < n; ++i) {
                            double ref = acc0[h * n + i], magnitude = std::fabs(ref);
                            for (std::size_t r = 0; r < count; ++r) {
                                ref += double{w[h * kBlock + r]} * x[r][i];
                                magnitude += std::fabs(double{w[h * kBlock + r]} * x[r][i]);
                            }
                            QVERIFY2(std::fabs(acc[h * n + i] - ref) <= 1e-5 * magnitude, qPrintable(where));
                        }
                }
            }
        }
    }
}

void TestPagedAttention::writes_where_kv_layout_says() {
    const Shape s{3, 3, 16, 21, 1};
    for (const KvDtype dtype : {KvDtype::F32, KvDtype::F16}) {
        std::mt19937 rng(7);
        Cache cache = make_cache(s, dtype, 8, rng);
        const std::size_t kv_values = std::size_t{s.ctx_len} * s.n_kv_heads * s.head_dim;
        const std::vector<float> k = random_vector(kv_values, 1.0f, rng);
        const std::vector<float> v = random_vector(kv_values, 1.0f, rng);
        write_all(cache, s, k, v);
        const KvLayout& layout = cache.layout;
        for (std::uint32_t p = 0; p < s.ctx_len; ++p)
            for (std::uint32_t h = 0; h < s.n_kv_heads; ++h)
                for (std::uint32_t d = 0; d < s.head_dim; ++d) {
                    const std::size_t block = cache.table[p / 8] * layout.bytes_per_block();
                    const std::size_t index = (std::size_t{p} * s.n_kv_heads + h) * s.head_dim + d;
                    const std::byte* k_at = cache.pool.data() + block + layout.k_offset(kLayer, h, p % 8);
                    const std::byte* v_at = cache.pool.data() + block + layout.v_offset(kLayer, h, p % 8);
                    if (dtype == KvDtype::F32) {
                        float stored_k, stored_v;
                        std::memcpy(&stored_k, k_at + 4 * d, 4);
                        std::memcpy(&stored_v, v_at + 4 * d, 4);
                        QCOMPARE(stored_k, k[index]);
                        QCOMPARE(stored_v, v[index]);
                    } else {
                        std::uint16_t stored_k, stored_v;
                        std::memcpy(&stored_k, k_at + 2 * d, 2);
                        std::memcpy(&stored_v, v_at + 2 * d, 2);
                        QCOMPARE(stored_k, kernel_test::f16_bits(k[index]));
                        QCOMPARE(stored_v, kernel_test::f16_bits(v[index]));
                    }
                }
        // Nothing outside layer kLayer's rows of the table's blocks changed:
        // count the bytes that are no longer 0xFF.
        const std::size_t written = std::count_if(cache.pool.begin(), cache.pool.end(),
                                                  [](std::byte b) { return b != std::byte{0xFF}; });
        const std::size_t row_bytes = layout.row_value_bytes();
        QVERIFY(written <= 2 * std::size_t{s.ctx_len} * s.n_kv_heads * row_bytes);
        QVERIFY(written > std::size_t{s.ctx_len} * s.n_kv_heads * row_bytes); // most bytes change
    }
}

void TestPagedAttention::rejects_bad_arguments() {
    const Shape s{2, 4, 8, 20, 1};
    std::mt19937 rng(8);
    Cache cache = make_cache(s, KvDtype::F32, 8, rng);
    std::vector<float> q(4 * 8), out(4 * 8), k(2 * 8), v(2 * 8);
    std::vector<float> scratch(paged_attention_scratch_floats(s.ctx_len, s.head_dim, 1));
    const auto attend = [&](const PagedKv& kv, std::span<const std::uint32_t> table,
                            std::uint32_t ctx, std::uint32_t n_q, std::uint32_t n_heads,
                            std::span<float> scr) {
        paged_attention(kv, table, ctx, q.data(), n_q, n_heads, out.data(), scr, 1);
    };
    const std::span<const std::uint32_t> table = cache.table;
    // A 20-token context needs 3 blocks of 8.
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, attend(cache.kv, table.first(2), 20, 1, 4, scratch));
    std::vector<std::uint32_t> outside = cache.table;
    outside[1] = static_cast<std::uint32_t>(cache.kv.n_blocks);
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, attend(cache.kv, outside, 20, 1, 4, scratch));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, attend(cache.kv, table, 20, 1, 3, scratch));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, attend(cache.kv, table, 20, 21, 4, scratch));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument,
                             attend(cache.kv, table, 20, 1, 4, std::span(scratch).first(scratch.size() - 1)));
    // The batch entry checks every sequence, and scratch for the longest.
    std::vector<float> out2(4 * 8);
    const auto attend_batch = [&](std::span<const std::uint32_t> second_table, std::uint32_t second_ctx,
                                  std::span<float> scr) {
        const DecodeSeq seqs[] = {{table, 20, q.data(), out.data(), nullptr},
                                  {second_table, second_ctx, q.data(), out2.data(), nullptr}};
        paged_attention_decode_batch(cache.kv, seqs, 4, scr, 1);
    };
    attend_batch(table.first(2), 16, scratch); // fits
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, attend_batch(table.first(2), 17, scratch));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, attend_batch(outside, 20, scratch));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument,
                             attend_batch(table, 20, std::span(scratch).first(scratch.size() - 1)));
    // Scales and soft caps that are negative or not finite; sinks that are
    // not finite (the last of the 4 heads').
    const float nan_sinks[] = {0.0f, 1.0f, 2.0f, NAN}, infinite_sinks[] = {0.0f, 1.0f, 2.0f, INFINITY};
    for (const AttentionOptions bad : {AttentionOptions{-1.0f, 0.0f, 0}, AttentionOptions{NAN, 0.0f, 0},
                                       AttentionOptions{0.0f, -2.0f, 0}, AttentionOptions{0.0f, INFINITY, 0},
                                       AttentionOptions{0.0f, 0.0f, 0, nan_sinks},
                                       AttentionOptions{0.0f, 0.0f, 0, infinite_sinks}}) {
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument,
                                 paged_attention(cache.kv, table, 20, q.data(), 1, 4, out.data(), scratch, 1, nullptr, bad));
        const DecodeSeq seq{table, 20, q.data(), out.data(), nullptr};
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument,
                                 paged_attention_decode_batch(cache.kv, std::span(&seq, 1), 4, scratch, 1, bad));
    }
    PagedKv overrun = cache.kv;
    overrun.v_offset = overrun.bytes_per_block - 4;
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, attend(overrun, table, 20, 1, 4, scratch));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument,
                             write_kv(cache.kv, static_cast<std::uint32_t>(cache.kv.n_blocks), 0, k.data(), v.data()));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, write_kv(cache.kv, 0, 8, k.data(), v.data()));
}

QTEST_APPLESS_MAIN(TestPagedAttention)
#include "test_paged_attention.moc"
