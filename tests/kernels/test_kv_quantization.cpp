// The quantized KV formats: what write_kv stores (checked byte for byte
// against codes this test computes itself from the format definitions in
// kernels/cpu/kv_write.h), what the fused attention decodes, and how far
// attention over each format lands from attention over the original f32
// K/V.
//
// Accuracy data: K, V, Q ~ N(0, 1), except 4 fixed key channels 10x larger
// in every token, the outlier channels real LLM keys show (KIVI, Liu et
// al. 2024, fig. 2; values show no such channels, so V has none). Error
// measure: relative L2 of all outputs, ||out - ref|| / ||ref||, against
// double-precision attention over the unquantized values.
//
// Bounds. Rounding a value with step q adds noise of sigma = q / sqrt(12);
// through V it moves the output by about that much relative to |v| ~ 1,
// through K it moves the scores by sigma * |q| (~sigma), which moves the
// softmax weights by a similar relative amount. So the expected relative
// error is about the per-value relative noise. Bounds are ~2x that
// estimate (and the measured value), tight enough that a decoding bug (a
// wrong scale, nibble, zero point or channel) fails by an order of
// magnitude. Measured on this data (both SIMD paths alike), head_dim 64 /
// 128, outlier keys | plain keys:
//   f32        float summation only                 3e-7      | 3e-7    bound 1e-5
//   f16        q = 2^-10 relative                   6e-4/5e-4 | 3e-4    bound 2e-3
//   bf16       q = 2^-7 relative                    5e-3/3e-3 | 2.5e-3  bound 1e-2
//   fp8-e4m3   q = 2^-3 relative: sigma ~3.6%       7.5e-2/7e-2 | 4e-2  bound 1.5e-1
//   int8       q = max|x| / 127 per token: ~2.8/127 on plain keys
//              (sigma 0.6%); the 10x channels make max|x| ~ 30, sigma 7%
//                                                   4e-2/5e-2 | 8e-3    bound 1e-1 | 1.5e-2
//   int4       q = (max - min) / 15 per group of 32: ~5.5/15 on plain data
//              (sigma ~10%); a group holding an outlier channel gets q ~ 4
//                                                   3.8e-1/3e-1 | 1.2e-1  bound 8e-1 | 1.5e-1
//   int4-kivi  keys per channel over 16 tokens: the outlier channel gets
//              its own q; values as int4           1.4e-1/1.1e-1 | 1e-1  bound 3e-1 | 1.5e-1
//              (and it must beat plain int4 on outlier keys)
//   int2-kivi  3 levels: q ~ range / 3, sigma ~50%  6e-1 | 5.3e-1         bound 1
#include <QTest>

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

using namespace kvscope::kernels::cpu;
using kernel_test::AttentionShape;
using kvscope::KvDtype;
using kvscope::KvLayout;

Q_DECLARE_METATYPE(kvscope::KvDtype)

namespace {

// Two threads, so that attention's parallel path runs.
constexpr int kThreads = 2;

// One layer of a pool and everything a sequence needs beside it.
struct Cache {
    KvLayout layout;
    std::vector<std::byte> pool;
    std::vector<std::uint32_t> table;
    std::vector<float> fixed_scales;
    std::vector<std::byte> tail;
    PagedKv kv;
};

// Blocks for ctx_len tokens, at shuffled places in a pool twice that size
// (or at blocks 0, 1, 2, ... when `consecutive`), filled with 0xFF first.
Cache make_cache(const AttentionShape& s, KvDtype dtype, std::uint32_t block_size, bool consecutive, unsigned seed) {
    Cache c{KvLayout({1, s.n_kv_heads, s.head_dim}, dtype, block_size), {}, {}, {}, {}, {}};
    const std::size_t blocks = c.layout.blocks_for_tokens(s.ctx_len);
    const std::size_t n_blocks = consecutive ? blocks : 2 * blocks + 1;
    c.pool.assign(n_blocks * c.layout.bytes_per_block(), std::byte{0xFF});
    c.table.resize(n_blocks);
    std::iota(c.table.begin(), c.table.end(), 0u);
    if (!consecutive) {
        std::mt19937 rng(seed);
        std::shuffle(c.table.begin(), c.table.end(), rng);
    }
    c.table.resize(blocks);
    c.fixed_scales.assign(c.layout.fixed_bytes() / 4, 1.0f);
    c.tail.assign(c.layout.tail_bytes(), std::byte{0xFF});
    c.kv = kvscope::paged_kv_view(c.layout, 0, c.pool.data(), n_blocks,
                                  c.fixed_scales.empty() ? nullptr : c.fixed_scales.data());
    return c;
}

void write_tokens(Cache& c, const AttentionShape& s, const std::vector<float>& k, const std::vector<float>& v,
                  std::uint32_t first, std::uint32_t end) {
    const std::size_t row = std::size_t{s.n_kv_heads} * s.head_dim;
    const std::uint32_t bs = c.layout.block_size();
    for (std::uint32_t p = first; p < end; ++p)
        write_kv(c.kv, c.table[p / bs], p % bs, k.data() + p * row, v.data() + p * row, c.tail.data());
}

std::vector<float> attend(const Cache& c, const AttentionShape& s, const std::vector<float>& q, bool paged = true) {
    std::vector<float> out(std::size_t{s.n_q} * s.n_heads * s.head_dim, std::nanf(""));
    std::vector<float> scratch(paged_attention_scratch_floats(s.ctx_len, s.head_dim, kThreads));
    if (paged)
        paged_attention(c.kv, c.table, s.ctx_len, q.data(), s.n_q, s.n_heads, out.data(), scratch, kThreads,
                        c.tail.data());
    else
        contiguous_attention(c.kv, s.ctx_len, q.data(), s.n_q, s.n_heads, out.data(), scratch, kThreads,
                             c.tail.data());
    return out;
}

double relative_l2(const std::vector<float>& out, const std::vector<double>& ref) {
    double err = 0.0, size = 0.0;
    for (std::size_t i = 0; i < ref.size(); ++i) {
        err += (out[i] - ref[i]) * (out[i] - ref[i]);
        size += ref[i] * ref[i];
    }
    return std::sqrt(err / size);
}

std::vector<float> normal_values(std::size_t n, std::mt19937& rng) {
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> v(n);
    for (float& x : v)
        x = normal(rng);
    return v;
}

constexpr std::uint32_t kOutlierChannels[] = {3, 17, 40, 41};

// Keys with the outlier channels of the header comment (or without).
std::vector<float> keys(const AttentionShape& s, std::mt19937& rng, bool outliers = true) {
    std::vector<float> k = normal_values(std::size_t{s.ctx_len} * s.n_kv_heads * s.head_dim, rng);
    for (std::size_t row = 0; outliers && row < k.size(); row += s.head_dim)
        for (std::uint32_t c : kOutlierChannels)
            k[row + c] *= 10.0f;
    return k;
}

double attention_error(KvDtype dtype, std::uint32_t head_dim, unsigned seed, bool outliers = true) {
    // 12 sealed blocks of 16 and 11 tokens in the last block; two query
    // heads per KV head; a decode step.
    const AttentionShape s{2, 4, head_dim, 203, 1};
    std::mt19937 rng(seed);
    const std::vector<float> k = keys(s, rng, outliers);
    const std::vector<float> v = normal_values(k.size(), rng);
    const std::vector<float> q = normal_values(std::size_t{s.n_heads} * head_dim, rng);
    Cache c = make_cache(s, dtype, 16, false, seed);
    write_tokens(c, s, k, v, 0, s.ctx_len);
    return relative_l2(attend(c, s, q), kernel_test::reference_attention(s, q, k, v));
}

// The bounds of the header comment: with the outlier keys, and on plain
// N(0, 1) keys.
double bound_for(KvDtype dtype, bool outliers = true) {
    switch (dtype) {
    case KvDtype::F32: return 1e-5;
    case KvDtype::F16: return 2e-3;
    case KvDtype::BF16: return 1e-2;
    case KvDtype::Fp8E4M3: return 1.5e-1;
    case KvDtype::Int8: return outliers ? 1e-1 : 1.5e-2;
    case KvDtype::Int4: return outliers ? 8e-1 : 1.5e-1;
    case KvDtype::Int4Kivi: return outliers ? 3e-1 : 1.5e-1;
    case KvDtype::Int2Kivi: return 1.0;
    }
    return 0.0;
}

std::uint16_t f16_at(const std::byte* p, std::size_t i) {
    std::uint16_t bits;
    std::memcpy(&bits, p + 2 * i, 2);
    return bits;
}

float f16_value(const std::byte* p, std::size_t i) {
    return kernel_test::f16_value(f16_at(p, i));
}

unsigned packed_code(const std::byte* row, std::size_t i, unsigned bits) {
    const std::size_t bit = i * bits;
    return (std::to_integer<unsigned>(row[bit / 8]) >> (bit % 8)) & ((1u << bits) - 1);
}

// The format's asymmetric code, computed here in double from its definition.
struct Expected {
    float scale, zero;
    std::vector<unsigned> codes;
};

Expected asymmetric(const std::vector<float>& x, unsigned levels) {
    const auto [lo, hi] = std::minmax_element(x.begin(), x.end());
    Expected e{kernel_test::f16_round((*hi - *lo) / static_cast<float>(levels)), kernel_test::f16_round(*lo), {}};
    for (float value : x)
        e.codes.push_back(static_cast<unsigned>(
            std::clamp(std::round((static_cast<double>(value) - e.zero) / e.scale), 0.0, static_cast<double>(levels))));
    return e;
}

// The value of an e4m3 code, from the format's definition.
double e4m3_value(unsigned code) {
    const int exponent = static_cast<int>((code >> 3) & 0xF), mantissa = static_cast<int>(code & 7);
    const double magnitude = exponent == 0 ? std::ldexp(mantissa / 8.0, -6) : std::ldexp(1.0 + mantissa / 8.0, exponent - 7);
    return (code & 0x80) ? -magnitude : magnitude;
}

} // namespace

class TestKvQuantization : public QObject {
    Q_OBJECT
private slots:
    void fp8_codes_round_to_nearest_even();
    void bf16_rounds_to_nearest_even();
    void int8_row_round_trip();
    void int4_groups_round_trip();
    void kivi_tail_then_sealed_block_data();
    void kivi_tail_then_sealed_block();
    void accuracy_against_f32_data();
    void accuracy_against_f32();
    void kivi_beats_int4_on_outlier_keys();
    void contiguous_matches_paged_data();
    void contiguous_matches_paged();
    void rejects_missing_tail_and_scales();
};

void TestKvQuantization::fp8_codes_round_to_nearest_even() {
    // value -> e4m3 code, derived by hand: 1.0 = 2^0 -> exponent 7, 0x38;
    // 1.0625 lies halfway between 1.0 and 1.125 (ties to even: 1.0);
    // 1.1875 halfway between 1.125 and 1.25 (even: 1.25 = 0x3A); 0.3 =
    // 1.2 * 2^-2 -> mantissa 1.6/8 rounds to 2/8: 0x2A; 448 is the largest
    // finite (0x7E), larger values saturate; 2^-6 is the smallest normal
    // (0x08); 1.5 * 2^-9 is halfway between subnormals 1 and 2 (even: 2).
    const std::vector<std::pair<float, unsigned>> cases = {
        {1.0f, 0x38},    {-2.0f, 0xC0},          {1.0625f, 0x38},       {1.1875f, 0x3A},
        {0.3f, 0x2A},    {448.0f, 0x7E},         {1000.0f, 0x7E},       {-1000.0f, 0xFE},
        {0x1p-6f, 0x08}, {1.5f * 0x1p-9f, 0x02}, {0.5f * 0x1p-9f, 0x00}, {0.0f, 0x00},
    };
    const AttentionShape s{1, 1, static_cast<std::uint32_t>(cases.size()), 1, 1};
    std::vector<float> x;
    for (const auto& c : cases)
        x.push_back(c.first);
    Cache c = make_cache(s, KvDtype::Fp8E4M3, 1, true, 1);
    c.fixed_scales[1] = 2.0f; // V's head scale: V stores x / 2
    write_tokens(c, s, x, x, 0, 1);
    const std::byte* k_row = c.pool.data() + c.layout.k_offset(0, 0, 0);
    const std::byte* v_row = c.pool.data() + c.layout.v_offset(0, 0, 0);
    std::vector<float> half(x.size());
    for (std::size_t i = 0; i < x.size(); ++i)
        half[i] = x[i] / 2.0f;
    // Attention over one token returns its V row, decoded.
    const std::vector<float> out = attend(c, s, std::vector<float>(x.size(), 0.0f));
    for (std::size_t i = 0; i < cases.size(); ++i) {
        QCOMPARE(std::to_integer<unsigned>(k_row[i]), cases[i].second);
        const unsigned v_code = std::to_integer<unsigned>(v_row[i]);
        if (std::fabs(half[i]) <= 448.0f && std::fabs(half[i]) >= 0x1p-6f)
            QVERIFY(std::fabs(e4m3_value(v_code) - half[i]) <= std::fabs(half[i]) / 16.0); // half a step of 2^-3
        QCOMPARE(static_cast<double>(out[i]), e4m3_value(v_code) * 2.0);
    }
}

void TestKvQuantization::bf16_rounds_to_nearest_even() {
    // bf16 keeps 7 mantissa bits: 1 + 2^-8 is halfway between 1 and
    // 1 + 2^-7 (even: 1.0 = 0x3F80); 1 + 3 * 2^-8 is halfway between
    // 1 + 2^-7 and 1 + 2^-6 (even: 0x3F82).
    const std::vector<float> x = {1.0f + 0x1p-8f, 1.0f + 3 * 0x1p-8f, -2.0f, 0.0f};
    const AttentionShape s{1, 1, 4, 1, 1};
    Cache c = make_cache(s, KvDtype::BF16, 1, true, 1);
    write_tokens(c, s, x, x, 0, 1);
    const std::byte* row = c.pool.data() + c.layout.k_offset(0, 0, 0);
    QCOMPARE(f16_at(row, 0), std::uint16_t{0x3F80});
    QCOMPARE(f16_at(row, 1), std::uint16_t{0x3F82});
    QCOMPARE(f16_at(row, 2), std::uint16_t{0xC000});
    QCOMPARE(f16_at(row, 3), std::uint16_t{0x0000});
}

void TestKvQuantization::int8_row_round_trip() {
    const std::vector<float> x = {0.5f, -1.25f, 3.0f, -2.0f, 0.1f, 0.0f, 2.75f, -0.6f};
    const AttentionShape s{1, 1, 8, 1, 1};
    Cache c = make_cache(s, KvDtype::Int8, 1, true, 1);
    write_tokens(c, s, x, x, 0, 1);
    const float scale = kernel_test::f16_round(3.0f / 127.0f); // max |x| / 127
    QCOMPARE(f16_value(c.pool.data() + c.layout.v_scale_offset(0, 0, 0), 0), scale);
    const std::byte* row = c.pool.data() + c.layout.v_offset(0, 0, 0);
    const std::vector<float> out = attend(c, s, std::vector<float>(8, 0.0f));
    for (std::size_t i = 0; i < x.size(); ++i) {
        const auto code = static_cast<std::int8_t>(std::to_integer<int>(row[i]));
        QCOMPARE(static_cast<int>(code), static_cast<int>(std::round(x[i] / scale)));
        QCOMPARE(out[i], static_cast<float>(code) * scale);
        QVERIFY(std::fabs(out[i] - x[i]) <= scale / 2 * 1.0001f);
    }
}

void TestKvQuantization::int4_groups_round_trip() {
    // head_dim 40: a group of 32 and a partial group of 8.
    const AttentionShape s{1, 1, 40, 1, 1};
    std::vector<float> x(40);
    for (std::size_t i = 0; i < x.size(); ++i)
        x[i] = std::sin(0.7f * static_cast<float>(i)) * (i < 32 ? 3.0f : 0.25f) + (i < 32 ? 0.0f : 5.0f);
    Cache c = make_cache(s, KvDtype::Int4, 1, true, 1);
    write_tokens(c, s, x, x, 0, 1);
    const std::byte* row = c.pool.data() + c.layout.v_offset(0, 0, 0);
    const std::byte* scales = c.pool.data() + c.layout.v_scale_offset(0, 0, 0);
    const std::vector<float> out = attend(c, s, std::vector<float>(40, 0.0f));
    for (std::size_t g = 0; g < 2; ++g) {
        const std::size_t first = 32 * g, end = std::min<std::size_t>(x.size(), first + 32);
        const Expected e = asymmetric(std::vector<float>(x.begin() + first, x.begin() + end), 15);
        QCOMPARE(f16_value(scales, 2 * g), e.scale);
        QCOMPARE(f16_value(scales, 2 * g + 1), e.zero);
        for (std::size_t i = first; i < end; ++i) {
            QCOMPARE(packed_code(row, i, 4), e.codes[i - first]);
            QVERIFY(std::fabs(out[i] - (static_cast<float>(e.codes[i - first]) * e.scale + e.zero)) <= 1e-6f * (std::fabs(out[i]) + 1));
            QVERIFY(std::fabs(out[i] - x[i]) <= e.scale / 2 * 1.001f + std::fabs(e.zero) * 1e-3f);
        }
    }
}

void TestKvQuantization::kivi_tail_then_sealed_block_data() {
    QTest::addColumn<KvDtype>("dtype");
    QTest::addColumn<int>("bits");
    QTest::newRow("int4-kivi") << KvDtype::Int4Kivi << 4;
    QTest::newRow("int2-kivi") << KvDtype::Int2Kivi << 2;
}

void TestKvQuantization::kivi_tail_then_sealed_block() {
    QFETCH(KvDtype, dtype);
    QFETCH(int, bits);
    const unsigned levels = (1u << bits) - 1;
    // Blocks of 4 tokens, head_dim 8, one head; channel c of key t is
    // (c - 4) * 0.5 + t * (c + 1) * 0.1: each channel its own range.
    AttentionShape s{1, 1, 8, 3, 1};
    std::vector<float> k(4 * 8), v(4 * 8);
    for (std::uint32_t t = 0; t < 4; ++t)
        for (std::uint32_t d = 0; d < 8; ++d) {
            k[t * 8 + d] = (static_cast<float>(d) - 4.0f) * 0.5f + static_cast<float>(t * (d + 1)) * 0.1f;
            v[t * 8 + d] = std::cos(static_cast<float>(t * 8 + d));
        }
    const std::vector<float> q = {0.3f, -0.2f, 0.5f, 0.1f, -0.4f, 0.2f, 0.0f, 0.6f};
    Cache c = make_cache(s, dtype, 4, true, 1);
    const std::vector<std::byte> untouched = c.pool;

    // Three tokens: all in the f16 tail, the pool block not yet written.
    write_tokens(c, s, k, v, 0, 3);
    QVERIFY(c.pool == untouched);
    std::vector<float> k16(k), v16(v);
    for (std::vector<float>* values : {&k16, &v16})
        for (float& x : *values)
            x = kernel_test::f16_round(x);
    QVERIFY(relative_l2(attend(c, s, q), kernel_test::reference_attention(s, q, k16, v16)) < 1e-5);

    // The fourth token seals the block: keys per channel over the 4
    // tokens, values per token.
    write_tokens(c, s, k, v, 3, 4);
    s.ctx_len = 4;
    const std::byte* block = c.pool.data();
    const std::byte* channel_scales = block + c.layout.k_scale_offset(0, 0, 0);
    std::vector<float> k_dequant(32), v_dequant(32);
    for (std::uint32_t d = 0; d < 8; ++d) {
        std::vector<float> channel;
        for (std::uint32_t t = 0; t < 4; ++t)
            channel.push_back(k16[t * 8 + d]);
        const Expected e = asymmetric(channel, levels);
        QCOMPARE(f16_value(channel_scales, d), e.scale);
        QCOMPARE(f16_value(channel_scales, 8 + d), e.zero);
        for (std::uint32_t t = 0; t < 4; ++t) {
            QCOMPARE(packed_code(block + c.layout.k_offset(0, 0, t), d, static_cast<unsigned>(bits)), e.codes[t]);
            k_dequant[t * 8 + d] = static_cast<float>(e.codes[t]) * e.scale + e.zero;
        }
    }
    for (std::uint32_t t = 0; t < 4; ++t) {
        const Expected e = asymmetric(std::vector<float>(v16.begin() + t * 8, v16.begin() + t * 8 + 8), levels);
        const std::byte* scales = block + c.layout.v_scale_offset(0, 0, t);
        QCOMPARE(f16_value(scales, 0), e.scale);
        QCOMPARE(f16_value(scales, 1), e.zero);
        for (std::uint32_t d = 0; d < 8; ++d) {
            QCOMPARE(packed_code(block + c.layout.v_offset(0, 0, t), d, static_cast<unsigned>(bits)), e.codes[d]);
            v_dequant[t * 8 + d] = static_cast<float>(e.codes[d]) * e.scale + e.zero;
        }
    }
    QVERIFY(relative_l2(attend(c, s, q), kernel_test::reference_attention(s, q, k_dequant, v_dequant)) < 1e-5);
}

void TestKvQuantization::accuracy_against_f32_data() {
    QTest::addColumn<KvDtype>("dtype");
    QTest::addColumn<int>("head_dim");
    QTest::addColumn<bool>("outliers");
    for (const KvDtype dtype : kvscope::all_kv_dtypes())
        for (const int head_dim : {64, 128})
            for (const bool outliers : {true, false})
                QTest::addRow("%s d%d %s", kvscope::to_string(dtype).data(), head_dim,
                              outliers ? "outlier keys" : "plain keys")
                    << dtype << head_dim << outliers;
}

void TestKvQuantization::accuracy_against_f32() {
    QFETCH(KvDtype, dtype);
    QFETCH(int, head_dim);
    QFETCH(bool, outliers);
    const double bound = bound_for(dtype, outliers);
    for (const SimdPath path : kernel_test::available_paths()) {
        kernel_test::PathScope scope(path);
        const double error = attention_error(dtype, static_cast<std::uint32_t>(head_dim), 42, outliers);
        qInfo("%s d%d %s keys %s: relative L2 error %.3g (bound %.3g)", kvscope::to_string(dtype).data(), head_dim,
              outliers ? "outlier" : "plain", to_string(path), error, bound);
        QVERIFY2(error < bound, qPrintable(QStringLiteral("%1 path: error %2, bound %3")
                                               .arg(to_string(path)).arg(error).arg(bound)));
    }
}

void TestKvQuantization::kivi_beats_int4_on_outlier_keys() {
    for (const std::uint32_t head_dim : {64u, 128u})
        for (const unsigned seed : {1u, 2u, 3u}) {
            const double int4 = attention_error(KvDtype::Int4, head_dim, seed);
            const double kivi = attention_error(KvDtype::Int4Kivi, head_dim, seed);
            QVERIFY2(kivi < int4, qPrintable(QStringLiteral("d%1 seed %2: int4-kivi %3 vs int4 %4")
                                                 .arg(head_dim).arg(seed).arg(kivi).arg(int4)));
        }
}

void TestKvQuantization::contiguous_matches_paged_data() {
    QTest::addColumn<KvDtype>("dtype");
    for (const KvDtype dtype : kvscope::all_kv_dtypes())
        QTest::newRow(kvscope::to_string(dtype).data()) << dtype;
}

void TestKvQuantization::contiguous_matches_paged() {
    // The same tokens in shuffled blocks (through the table) and in
    // consecutive blocks (no table): the same arithmetic, bit for bit. A
    // prefill chunk of 9 queries, a context ending mid-block.
    QFETCH(KvDtype, dtype);
    const AttentionShape s{2, 4, 64, 45, 9};
    std::mt19937 rng(5);
    const std::vector<float> k = keys(s, rng);
    const std::vector<float> v = normal_values(k.size(), rng);
    const std::vector<float> q = normal_values(std::size_t{s.n_q} * s.n_heads * s.head_dim, rng);
    Cache paged = make_cache(s, dtype, 8, false, 9);
    Cache contiguous = make_cache(s, dtype, 8, true, 9);
    QVERIFY(paged.table != contiguous.table);
    write_tokens(paged, s, k, v, 0, s.ctx_len);
    write_tokens(contiguous, s, k, v, 0, s.ctx_len);
    const std::vector<float> a = attend(paged, s, q, true);
    const std::vector<float> b = attend(contiguous, s, q, false);
    QVERIFY(a == b);
    QVERIFY(relative_l2(a, kernel_test::reference_attention(s, q, k, v)) < bound_for(dtype));
}

void TestKvQuantization::rejects_missing_tail_and_scales() {
    const AttentionShape s{1, 1, 8, 3, 1};
    const std::vector<float> x(8, 1.0f), q(8, 0.0f);
    std::vector<float> out(8), scratch(paged_attention_scratch_floats(3, 8, 1));
    Cache kivi = make_cache(s, KvDtype::Int4Kivi, 4, true, 1);
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, write_kv(kivi.kv, 0, 0, x.data(), x.data()));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument,
                             paged_attention(kivi.kv, kivi.table, 3, q.data(), 1, 1, out.data(), scratch, 1));
    Cache fp8 = make_cache(s, KvDtype::Fp8E4M3, 4, true, 1);
    PagedKv no_scales = fp8.kv;
    no_scales.fixed_scales = nullptr;
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, write_kv(no_scales, 0, 0, x.data(), x.data()));
    fp8.fixed_scales[0] = 0.0f;
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, write_kv(fp8.kv, 0, 0, x.data(), x.data()));
}

QTEST_APPLESS_MAIN(TestKvQuantization)
#include "test_kv_quantization.moc"
