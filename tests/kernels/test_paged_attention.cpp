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
// reference uses the f16-rounded K/V (rounded by the compiler's _Float16),
// so the same bound holds.
#include <QTest>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>
#include <stdexcept>
#include <vector>

#include "attention_reference.h"
#include "engine/kv/kv_layout.h"
#include "engine/runtime/paged_kv_view.h"
#include "kernel_test_support.h"
#include "kernels/cpu/kv_write.h"
#include "kernels/cpu/paged_attention.h"
#include "kernels/cpu/parallel.h"

using namespace kvscope::kernels::cpu;
using kvscope::KvDtype;
using kvscope::KvLayout;

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

// A pool holding K/V for positions [0, ctx_len) of one sequence.
struct Cache {
    KvLayout layout;
    std::vector<std::byte> pool;
    std::vector<std::uint32_t> table;
    PagedKv kv;
};

Cache make_cache(const Shape& s, KvDtype dtype, std::uint32_t block_size, std::mt19937& rng) {
    Cache c{KvLayout({kLayers, s.n_kv_heads, s.head_dim}, dtype, block_size), {}, {}, {}};
    const std::size_t blocks = c.layout.blocks_for_tokens(s.ctx_len);
    const std::size_t n_blocks = 2 * blocks + 3;
    c.pool.assign(n_blocks * c.layout.bytes_per_block(), std::byte{0xFF}); // NaN in f32 and f16
    c.table = random_table(blocks, n_blocks, rng);
    c.kv = kvscope::paged_kv_view(c.layout, kLayer, c.pool.data(), n_blocks, nullptr);
    return c;
}

void write_all(const Cache& c, const Shape& s, const std::vector<float>& k, const std::vector<float>& v) {
    const std::size_t row = std::size_t{s.n_kv_heads} * s.head_dim;
    const std::uint32_t bs = c.layout.block_size();
    for (std::uint32_t p = 0; p < s.ctx_len; ++p)
        write_kv(c.kv, c.table[p / bs], p % bs, k.data() + p * row, v.data() + p * row);
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

std::vector<float> run_attention(const Cache& c, const Shape& s, const std::vector<float>& q) {
    std::vector<float> out(q.size(), std::nanf(""));
    std::vector<float> scratch(paged_attention_scratch_floats(s.ctx_len, s.head_dim));
    paged_attention(c.kv, c.table, s.ctx_len, q.data(), s.n_q, s.n_heads, out.data(), scratch);
    return out;
}

} // namespace

class TestPagedAttention : public QObject {
    Q_OBJECT
private slots:
    void cleanupTestCase() { set_num_threads(0); }
    void matches_double_reference_data();
    void matches_double_reference();
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
        set_num_threads(1);
        const std::vector<float> one = run_attention(cache, s, q);
        set_num_threads(2);
        const std::vector<float> two = run_attention(cache, s, q);
        set_num_threads(5); // more threads than this machine's cores
        const std::vector<float> five = run_attention(cache, s, q);
        const double error = worst_relative_error(two, ref, s.head_dim);
        QVERIFY2(error < 1e-5, qPrintable(QStringLiteral("%1 path: relative error %2")
                                              .arg(to_string(path)).arg(error, 0, 'g', 3)));
        // Each output row is computed whole by one thread.
        QVERIFY(one == two);
        QVERIFY(one == five);
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
    std::vector<float> scratch(paged_attention_scratch_floats(s.ctx_len, s.head_dim));
    const auto attend = [&](const PagedKv& kv, std::span<const std::uint32_t> table,
                            std::uint32_t ctx, std::uint32_t n_q, std::uint32_t n_heads,
                            std::span<float> scr) {
        paged_attention(kv, table, ctx, q.data(), n_q, n_heads, out.data(), scr);
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
    PagedKv overrun = cache.kv;
    overrun.v_offset = overrun.bytes_per_block - 4;
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, attend(overrun, table, 20, 1, 4, scratch));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument,
                             write_kv(cache.kv, static_cast<std::uint32_t>(cache.kv.n_blocks), 0, k.data(), v.data()));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, write_kv(cache.kv, 0, 8, k.data(), v.data()));
}

QTEST_APPLESS_MAIN(TestPagedAttention)
#include "test_paged_attention.moc"
