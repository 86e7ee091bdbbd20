// The element-wise kernels against their formulas evaluated in double:
// RMSNorm, RoPE (both pairings; angles once per pass; scaled frequencies),
// softmax, soft-capping, GELU-gated (with llama.cpp's f16 roundings) and SiLU-gated
// product on each SIMD path, the row and gated kernels on two threads
// against one, and the
// float -> f16 rounding used for f16 KV storage (against binary16's
// definition, kernel_test_support.h, and, where present, F16C).
#include <QTest>

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <numbers>
#include <numeric>
#include <random>
#include <stdexcept>
#include <vector>

#include "kernel_test_support.h"
#include "kernels/cpu/activation.h"
#include "kernels/cpu/float16.h"
#include "kernels/cpu/float16_encode.h"
#include "kernels/cpu/kv_write.h"
#include "kernels/cpu/norm.h"
#include "kernels/cpu/rope.h"

using namespace kvscope::kernels::cpu;

Q_DECLARE_METATYPE(kvscope::kernels::cpu::RopeStyle)

namespace {

std::vector<float> random_vector(std::size_t n, float scale, std::mt19937& rng) {
    std::uniform_real_distribution<float> uniform(-scale, scale);
    std::vector<float> v(n);
    for (float& x : v)
        x = uniform(rng);
    return v;
}

void expect_close(double got, double expected, double tolerance, const char* what, std::size_t i) {
    if (!(std::fabs(got - expected) <= tolerance))
        QFAIL(qPrintable(QStringLiteral("%1[%2]: got %3, expected %4 +- %5")
                             .arg(what).arg(i).arg(got, 0, 'g', 9).arg(expected, 0, 'g', 9)
                             .arg(tolerance, 0, 'g', 3)));
}

float from_bits(std::uint32_t bits) {
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
}

// The pair rope rotates for dimension pair i of a head.
std::pair<std::size_t, std::size_t> rope_pair(RopeStyle style, std::size_t i, std::size_t rot_dim) {
    return style == RopeStyle::AdjacentPairs ? std::pair{2 * i, 2 * i + 1}
                                             : std::pair{i, i + rot_dim / 2};
}

// Stores values through write_kv's f16 path, for the SIMD path in use, and
// returns the bits. Rows of 11 values cover both the 8-wide and the
// one-at-a-time code.
std::vector<std::uint16_t> stored_f16(const std::vector<float>& values) {
    constexpr std::uint32_t dim = 11;
    std::vector<float> padded = values;
    padded.resize((values.size() + dim - 1) / dim * dim);
    std::vector<std::byte> pool(2 * 2 * dim);
    PagedKv kv;
    kv.pool = pool.data();
    kv.n_blocks = 1;
    kv.bytes_per_block = pool.size();
    kv.k_offset = 0;
    kv.v_offset = 2 * dim;
    kv.slot_stride = 2 * dim;
    kv.block_size = 1;
    kv.elem = KvElem::F16;
    kv.n_kv_heads = 1;
    kv.head_dim = dim;
    std::vector<std::uint16_t> bits(padded.size());
    for (std::size_t i = 0; i < padded.size(); i += dim) {
        write_kv(kv, 0, 0, padded.data() + i, padded.data() + i);
        std::memcpy(bits.data() + i, pool.data(), 2 * dim);
    }
    bits.resize(values.size());
    return bits;
}

} // namespace

class TestKernelOps : public QObject {
    Q_OBJECT
private slots:
    void rms_norm_matches_formula();
    void rope_matches_formula_data();
    void rope_matches_formula();
    void rope_angles_once_rotates_like_rope();
    void rope_frequencies_match_formula_data();
    void rope_frequencies_match_formula();
    void rope_frequencies_reject_bad_values();
    void rope_at_position_zero_is_identity();
    void rope_rejects_bad_rot_dim();
    void softmax_sums_to_one_and_matches_formula();
    void softmax_is_stable_for_large_inputs();
    void silu_mul_matches_formula();
    void gelu_mul_matches_rounded_formula();
    void threaded_calls_match_one_thread();
    void softcap_matches_formula();
    void f16_decoding_matches_definition();
    void f16_rounding_matches_definition();
    void f16_rounding_edge_cases();
};

void TestKernelOps::rms_norm_matches_formula() {
    std::mt19937 rng(1);
    for (const std::size_t n : {std::size_t{1}, std::size_t{7}, std::size_t{768}, std::size_t{4096}}) {
        const std::vector<float> x = random_vector(n, 3.0f, rng);
        const std::vector<float> weight = random_vector(n, 2.0f, rng);
        const float eps = 1e-5f;
        std::vector<float> out(n);
        rms_norm(x.data(), weight.data(), n, eps, out.data());
        double squares = 0.0;
        for (const float v : x)
            squares += static_cast<double>(v) * v;
        const double scale = 1.0 / std::sqrt(squares / static_cast<double>(n) + eps);
        for (std::size_t i = 0; i < n; ++i) {
            const double expected = x[i] * scale * weight[i];
            expect_close(out[i], expected, 4e-7 * std::fabs(expected) + 1e-12, "rms_norm", i);
        }
        // In place gives the same.
        std::vector<float> in_place = x;
        rms_norm(in_place.data(), weight.data(), n, eps, in_place.data());
        QCOMPARE(in_place, out);
    }
}

void TestKernelOps::rope_matches_formula_data() {
    QTest::addColumn<RopeStyle>("style");
    QTest::addColumn<int>("head_dim");
    QTest::addColumn<int>("rot_dim");
    QTest::addColumn<int>("position");
    QTest::addColumn<float>("theta");
    QTest::newRow("llama 64") << RopeStyle::AdjacentPairs << 64 << 64 << 17 << 10000.0f;
    QTest::newRow("llama 128 far") << RopeStyle::AdjacentPairs << 128 << 128 << 30000 << 500000.0f;
    QTest::newRow("neox 64") << RopeStyle::Halves << 64 << 64 << 17 << 10000.0f;
    QTest::newRow("neox 128 far") << RopeStyle::Halves << 128 << 128 << 30000 << 1000000.0f;
    QTest::newRow("neox partial") << RopeStyle::Halves << 80 << 32 << 123 << 10000.0f;
    QTest::newRow("llama partial") << RopeStyle::AdjacentPairs << 64 << 16 << 5 << 10000.0f;
}

void TestKernelOps::rope_matches_formula() {
    QFETCH(RopeStyle, style);
    QFETCH(int, head_dim);
    QFETCH(int, rot_dim);
    QFETCH(int, position);
    QFETCH(float, theta);
    std::mt19937 rng(2);
    const std::size_t heads = 3;
    const auto dim = static_cast<std::size_t>(head_dim);
    const auto rot = static_cast<std::size_t>(rot_dim);
    const std::vector<float> x = random_vector(heads * dim, 1.0f, rng);
    std::vector<float> y = x;
    rope(y.data(), heads, dim, rot, static_cast<std::uint32_t>(position), theta, style);

    std::vector<double> expected(x.begin(), x.end());
    for (std::size_t h = 0; h < heads; ++h)
        for (std::size_t i = 0; i < rot / 2; ++i) {
            const double angle = position * std::pow(static_cast<double>(theta),
                                                     -2.0 * static_cast<double>(i) / static_cast<double>(rot));
            const auto [a, b] = rope_pair(style, i, rot);
            const double xa = x[h * dim + a];
            const double xb = x[h * dim + b];
            expected[h * dim + a] = xa * std::cos(angle) - xb * std::sin(angle);
            expected[h * dim + b] = xa * std::sin(angle) + xb * std::cos(angle);
        }
    // cos and sin are rounded to float, then two products and a sum: a few
    // float ulps of the inputs' size (|x| <= 1).
    for (std::size_t i = 0; i < y.size(); ++i)
        expect_close(y[i], expected[i], 4e-7, "rope", i);
    // Dimensions past rot_dim are untouched.
    for (std::size_t h = 0; h < heads; ++h)
        for (std::size_t d = rot; d < dim; ++d)
            QCOMPARE(y[h * dim + d], x[h * dim + d]);
}

void TestKernelOps::rope_angles_once_rotates_like_rope() {
    // A forward pass computes the angles once for its positions and rotates
    // every layer's q and k with them: the same bits as rope() per position.
    std::mt19937 rng(7);
    const std::vector<std::uint32_t> positions{0, 1, 17, 4095, 131071};
    const std::size_t heads = 3, dim = 64;
    std::vector<float> table;
    rope_angles(positions.data(), positions.size(), dim, 500000.0f, table);
    QCOMPARE(table.size(), positions.size() * dim);
    for (const RopeStyle style : {RopeStyle::AdjacentPairs, RopeStyle::Halves})
        for (std::size_t t = 0; t < positions.size(); ++t) {
            const std::vector<float> x = random_vector(heads * dim, 2.0f, rng);
            std::vector<float> once = x, each = x;
            rope_rotate(once.data(), heads, dim, dim, table.data() + t * dim, style);
            rope(each.data(), heads, dim, dim, positions[t], 500000.0f, style);
            QCOMPARE(once, each);
        }
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, rope_angles(positions.data(), 1, 63, 10000.0f, table));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument,
                             rope_rotate(table.data(), 1, 32, 64, table.data(), RopeStyle::Halves));
}

// RopeFrequencies against ggml's formula in double: angle_i = position *
// theta_base^(-2i / rot_dim) / factors[i] * freq_scale, cos and sin times
// attn_factor. Linear scaling; per-pair factors as Llama 3.1's rope_freqs
// (1 for the fast pairs rising to 8 for the slow ones) and as Phi-3's
// LongRoPE (1 to ~40) with its attn_factor; Phi-4-mini's partial neox
// rotation (96 of 128 dims) and a partial llama one.
void TestKernelOps::rope_frequencies_match_formula_data() {
    QTest::addColumn<RopeStyle>("style");
    QTest::addColumn<int>("head_dim");
    QTest::addColumn<int>("rot_dim");
    QTest::addColumn<int>("position");
    QTest::addColumn<float>("theta");
    QTest::addColumn<float>("freq_scale");
    QTest::addColumn<double>("largest_factor"); // 0: no factors
    QTest::addColumn<float>("attn_factor");
    QTest::newRow("linear x4 llama") << RopeStyle::AdjacentPairs << 64 << 64 << 3000 << 10000.0f << 0.25f << 0.0 << 1.0f;
    QTest::newRow("llama 3.1 factors") << RopeStyle::AdjacentPairs << 128 << 128 << 20000 << 500000.0f << 1.0f << 8.0
                                       << 1.0f;
    QTest::newRow("phi-4-mini longrope 96 of 128") << RopeStyle::Halves << 128 << 96 << 5000 << 10000.0f << 1.0f
                                                   << 40.0 << 1.19f;
    QTest::newRow("neox partial, all four") << RopeStyle::Halves << 80 << 32 << 777 << 1000000.0f << 0.5f << 3.0
                                            << 0.9f;
    QTest::newRow("llama partial scaled") << RopeStyle::AdjacentPairs << 64 << 16 << 123 << 10000.0f << 0.125f << 0.0
                                          << 1.0f;
}

void TestKernelOps::rope_frequencies_match_formula() {
    QFETCH(RopeStyle, style);
    QFETCH(int, head_dim);
    QFETCH(int, rot_dim);
    QFETCH(int, position);
    QFETCH(float, theta);
    QFETCH(float, freq_scale);
    QFETCH(double, largest_factor);
    QFETCH(float, attn_factor);
    const std::size_t heads = 3, dim = static_cast<std::size_t>(head_dim), rot = static_cast<std::size_t>(rot_dim);
    const std::size_t pairs = rot / 2;
    // Factors rising geometrically from 1 to largest_factor over the pairs.
    std::vector<float> factors(pairs, 1.0f);
    for (std::size_t i = 0; i < pairs; ++i)
        factors[i] = static_cast<float>(std::pow(largest_factor, static_cast<double>(i) / static_cast<double>(pairs - 1)));
    const RopeFrequencies frequencies{theta, freq_scale, largest_factor > 0 ? factors.data() : nullptr, attn_factor};
    const auto p = static_cast<std::uint32_t>(position);
    std::vector<float> table;
    rope_angles(&p, 1, rot, frequencies, table);
    QCOMPARE(table.size(), rot);
    std::mt19937 rng(9);
    const std::vector<float> x = random_vector(heads * dim, 1.0f, rng);
    std::vector<float> y = x;
    rope_rotate(y.data(), heads, dim, rot, table.data(), style);

    std::vector<double> expected(x.begin(), x.end());
    for (std::size_t h = 0; h < heads; ++h)
        for (std::size_t i = 0; i < pairs; ++i) {
            const double factor = largest_factor > 0 ? factors[i] : 1.0;
            const double angle = position * std::pow(static_cast<double>(theta), -2.0 * static_cast<double>(i) /
                                                                                      static_cast<double>(rot)) /
                                 factor * freq_scale;
            const auto [a, b] = rope_pair(style, i, rot);
            const double xa = x[h * dim + a], xb = x[h * dim + b];
            expected[h * dim + a] = attn_factor * (xa * std::cos(angle) - xb * std::sin(angle));
            expected[h * dim + b] = attn_factor * (xa * std::sin(angle) + xb * std::cos(angle));
        }
    // As rope_matches_formula, the cos and sin rounded to float after the
    // attn_factor: a few ulps of attn_factor x |x| <= 1.19.
    for (std::size_t i = 0; i < y.size(); ++i)
        expect_close(y[i], expected[i], 5e-7, "rope", i);
    for (std::size_t h = 0; h < heads; ++h)
        for (std::size_t d = rot; d < dim; ++d)
            QCOMPARE(y[h * dim + d], x[h * dim + d]);
}

void TestKernelOps::rope_frequencies_reject_bad_values() {
    const std::uint32_t p = 5;
    std::vector<float> table, plain;
    // The defaults are the plain rotation, bit for bit.
    rope_angles(&p, 1, 64, RopeFrequencies{500000.0f}, table);
    rope_angles(&p, 1, 64, 500000.0f, plain);
    QCOMPARE(table, plain);
    std::vector<float> factors(32, 2.0f);
    factors[31] = 0.0f;
    for (const RopeFrequencies bad : {RopeFrequencies{0.0f}, RopeFrequencies{NAN}, RopeFrequencies{1e4f, 0.0f},
                                      RopeFrequencies{1e4f, -1.0f}, RopeFrequencies{1e4f, 1.0f, factors.data()},
                                      RopeFrequencies{1e4f, 1.0f, nullptr, INFINITY}})
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, rope_angles(&p, 1, 64, bad, table));
}

void TestKernelOps::rope_at_position_zero_is_identity() {
    std::mt19937 rng(3);
    const std::vector<float> x = random_vector(4 * 64, 5.0f, rng);
    for (const RopeStyle style : {RopeStyle::AdjacentPairs, RopeStyle::Halves}) {
        std::vector<float> y = x;
        rope(y.data(), 4, 64, 64, 0, 10000.0f, style);
        QCOMPARE(y, x);
    }
}

void TestKernelOps::rope_rejects_bad_rot_dim() {
    std::vector<float> x(64);
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument,
                             rope(x.data(), 1, 64, 65, 1, 10000.0f, RopeStyle::Halves));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument,
                             rope(x.data(), 1, 32, 64, 1, 10000.0f, RopeStyle::Halves));
}

void TestKernelOps::softmax_sums_to_one_and_matches_formula() {
    std::mt19937 rng(4);
    for (const std::size_t n : {std::size_t{1}, std::size_t{10}, std::size_t{32000}}) {
        const std::vector<float> x = random_vector(n, 10.0f, rng);
        std::vector<float> y = x;
        softmax(y.data(), n);
        double total = 0.0;
        for (const float v : x)
            total += std::exp(static_cast<double>(v));
        double sum = 0.0;
        // x - max is rounded to half a float ulp of up to 20 (1e-6), which
        // exp turns into a relative error of that size.
        for (std::size_t i = 0; i < n; ++i) {
            const double expected = std::exp(static_cast<double>(x[i])) / total;
            expect_close(y[i], expected, 4e-6 * expected, "softmax", i);
            sum += y[i];
        }
        expect_close(sum, 1.0, 1e-5, "softmax sum", 0);
    }
}

void TestKernelOps::softmax_is_stable_for_large_inputs() {
    // exp(1000) overflows float (and double): only max-subtraction works.
    std::vector<float> x{1000.0f, 999.0f, 998.0f, -std::numeric_limits<float>::infinity(), -1000.0f};
    softmax(x.data(), x.size());
    const double e1 = std::exp(-1.0), e2 = std::exp(-2.0);
    const double total = 1.0 + e1 + e2;
    expect_close(x[0], 1.0 / total, 1e-7, "softmax", 0);
    expect_close(x[1], e1 / total, 1e-7, "softmax", 1);
    expect_close(x[2], e2 / total, 1e-7, "softmax", 2);
    QCOMPARE(x[3], 0.0f); // masked
    QCOMPARE(x[4], 0.0f); // exp(-2000) underflows
}

void TestKernelOps::silu_mul_matches_formula() {
    std::mt19937 rng(5);
    std::vector<float> gate = random_vector(1000, 12.0f, rng);
    gate.push_back(-200.0f); // exp(200) overflows float: must give -0, not NaN
    gate.push_back(200.0f);
    gate.push_back(-90.0f); // e^-90 is below float's normals: the vector exp's cut-off
    gate.push_back(-0.0f);
    const std::vector<float> up = random_vector(gate.size(), 3.0f, rng);
    const auto check = [&](std::size_t first, std::size_t n) {
        std::vector<float> out(n);
        silu_mul(gate.data() + first, up.data() + first, out.data(), n);
        for (std::size_t i = 0; i < n; ++i) {
            const double g = gate[first + i];
            const double expected = g / (1.0 + std::exp(-g)) * up[first + i];
            QVERIFY(!std::isnan(out[i]));
            expect_close(out[i], expected, 1e-6 * std::fabs(expected) + 1e-30, "silu_mul", first + i);
        }
    };
    for (const SimdPath path : kernel_test::available_paths()) {
        kernel_test::PathScope scope(path);
        check(0, gate.size());
        for (std::size_t n = 1; n <= 20; ++n) // whole vectors and every tail length
            check(gate.size() - n, n);
    }
}

// gelu_mul's definition (activation.h): gelu of the gate rounded to f16,
// in double, rounded to f16, times up; 0 from -10 down, the gate from 10
// up. Every f16 gate in (-10, 10) (the result depends on nothing else)
// with up = 1: the same f16 value as the double reference or one f16 step
// from it, for at most 0.1% of gates (float rounding of the gelu crossing
// an f16 rounding boundary); random gates, not on the f16 grid and past
// the cut-offs, with random up: exactly that product in float. Whole
// vectors and every tail length, in place, on each SIMD path.
void TestKernelOps::gelu_mul_matches_rounded_formula() {
    const auto gelu = [](double x) { // the tanh approximation, in double
        return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / std::numbers::pi) * (x + 0.044715 * x * x * x)));
    };
    std::vector<float> grid;
    for (std::uint32_t h = 0; h < 0x10000; ++h) {
        const float x = f16_to_f32(static_cast<std::uint16_t>(h));
        if (x > -10.0f && x < 10.0f)
            grid.push_back(x);
    }
    std::mt19937 rng(10);
    std::vector<float> gate = random_vector(2000, 12.0f, rng);
    for (const float x : {-10.0f, 10.0f, std::nextafter(-10.0f, 0.0f), std::nextafter(10.0f, 0.0f), -0.0f, 1e-7f})
        gate.push_back(x);
    const std::vector<float> up = random_vector(gate.size(), 3.0f, rng);
    for (const SimdPath path : kernel_test::available_paths()) {
        kernel_test::PathScope scope(path);
        const std::vector<float> ones(grid.size(), 1.0f);
        std::vector<float> g(grid.size());
        gelu_mul(grid.data(), ones.data(), g.data(), grid.size());
        std::size_t steps = 0;
        for (std::size_t i = 0; i < grid.size(); ++i) {
            const int got = kernel_test::f16_bits(g[i]), want = kernel_test::f16_bits(static_cast<float>(gelu(grid[i])));
            QVERIFY2(kernel_test::f16_round(g[i]) == g[i], qPrintable(QString::number(grid[i]))); // an f16 value
            // Adjacent f16 values: bit patterns one apart, or +-0 and the smallest subnormal.
            const int distance = (got ^ want) & 0x8000 ? (got & 0x7fff) + (want & 0x7fff) : std::abs(got - want);
            QVERIFY2(distance <= 1, qPrintable(QStringLiteral("%1 path, gelu(%2): got %3, expected %4")
                                                   .arg(to_string(path)).arg(static_cast<double>(grid[i]), 0, 'g', 9)
                                                   .arg(static_cast<double>(g[i]), 0, 'g', 9).arg(gelu(grid[i]), 0, 'g', 9)));
            steps += static_cast<std::size_t>(distance);
        }
        QVERIFY2(steps * 1000 <= grid.size(), qPrintable(QStringLiteral("%1 of %2 one step off").arg(steps).arg(grid.size())));
        const auto check = [&](std::size_t first, std::size_t n) {
            std::vector<float> out(gate.begin() + static_cast<std::ptrdiff_t>(first),
                                   gate.begin() + static_cast<std::ptrdiff_t>(first + n));
            gelu_mul(out.data(), up.data() + first, out.data(), n); // in place over the gate
            for (std::size_t i = 0; i < n; ++i) {
                const float x = gate[first + i];
                float expected = x <= -10.0f ? 0.0f : x >= 10.0f ? x : kernel_test::f16_round(x);
                if (x > -10.0f && x < 10.0f) { // the grid's value, checked above
                    const float one = 1.0f;
                    gelu_mul(&expected, &one, &expected, 1);
                }
                QCOMPARE(out[i], expected * up[first + i]);
            }
        };
        check(0, gate.size());
        for (std::size_t n = 1; n <= 20; ++n)
            check(gate.size() - n, n);
    }
}

// rms_norm_rows, silu_mul and gelu_mul share their work among threads
// when it is large enough: on two threads, bit for bit what one thread
// gives (rms_norm_rows: rms_norm of each row), in place too, for sizes
// below the cut-over, whole pieces and a ragged last piece.
void TestKernelOps::threaded_calls_match_one_thread() {
    std::mt19937 rng(12);
    for (const std::size_t rows : {std::size_t{1}, std::size_t{16}, std::size_t{301}}) {
        const std::size_t n = 128;
        const std::vector<float> x = random_vector(rows * n, 3.0f, rng), weight = random_vector(n, 2.0f, rng);
        std::vector<float> expected(x.size()), out(x.size()), in_place = x;
        for (std::size_t r = 0; r < rows; ++r)
            rms_norm(x.data() + r * n, weight.data(), n, 1e-6f, expected.data() + r * n);
        rms_norm_rows(x.data(), weight.data(), rows, n, 1e-6f, out.data(), 2);
        QCOMPARE(out, expected);
        rms_norm_rows(in_place.data(), weight.data(), rows, n, 1e-6f, in_place.data(), 2);
        QCOMPARE(in_place, expected);
    }
    for (const SimdPath path : kernel_test::available_paths()) {
        kernel_test::PathScope scope(path);
        for (const std::size_t n : {std::size_t{1000}, std::size_t{8192}, std::size_t{50003}}) {
            const std::vector<float> gate = random_vector(n, 12.0f, rng), up = random_vector(n, 3.0f, rng);
            std::vector<float> one(n), two(n);
            silu_mul(gate.data(), up.data(), one.data(), n, 1);
            silu_mul(gate.data(), up.data(), two.data(), n, 2);
            QCOMPARE(two, one);
            gelu_mul(gate.data(), up.data(), one.data(), n, 1);
            two = gate;
            gelu_mul(two.data(), up.data(), two.data(), n, 2); // in place over the gate
            QCOMPARE(two, one);
        }
    }
}

// softcap against cap * tanh(x / cap) in double: the scaling by 1 / cap
// and by cap and tanh's own error (a few ulp) stay within 6e-7 of the
// result. Large and small inputs, zeros and infinities; the tail lengths;
// bad caps.
void TestKernelOps::softcap_matches_formula() {
    std::mt19937 rng(11);
    std::vector<float> x = random_vector(1000, 200.0f, rng);
    const std::vector<float> small = random_vector(200, 0.01f, rng);
    x.insert(x.end(), small.begin(), small.end());
    const float inf = std::numeric_limits<float>::infinity();
    for (const float v : {0.0f, -0.0f, inf, -inf, 1e-30f, 0.624f * 30.0f, 0.626f * 30.0f})
        x.push_back(v);
    for (const SimdPath path : kernel_test::available_paths()) {
        kernel_test::PathScope scope(path);
        for (const float cap : {30.0f, 50.0f}) {
            const auto check = [&](std::size_t first, std::size_t n) {
                std::vector<float> y(x.begin() + static_cast<std::ptrdiff_t>(first),
                                     x.begin() + static_cast<std::ptrdiff_t>(first + n));
                softcap(y.data(), n, cap);
                for (std::size_t i = 0; i < n; ++i) {
                    const double expected = cap * std::tanh(static_cast<double>(x[first + i]) / cap);
                    expect_close(y[i], expected, 6e-7 * std::fabs(expected), "softcap", first + i);
                }
            };
            check(0, x.size());
            for (std::size_t n = 1; n <= 20; ++n)
                check(x.size() - n, n);
        }
    }
    float y = 1.0f;
    for (const float bad : {0.0f, -1.0f, inf, std::numeric_limits<float>::quiet_NaN()})
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, softcap(&y, 1, bad));
}

// Every f16 value, decoded (AArch64: FCVT) against binary16's definition
// computed in double: (-1)^s x 2^(e - 15) x 1.m, or 2^-14 x 0.m for e = 0;
// infinities and NaNs keep their payload bits.
void TestKernelOps::f16_decoding_matches_definition() {
    for (std::uint32_t h = 0; h < 0x10000; ++h) {
        const auto bits = static_cast<std::uint16_t>(h);
        const std::uint32_t exponent = (h >> 10) & 0x1Fu, mantissa = h & 0x3FFu;
        const double sign = (h & 0x8000u) != 0 ? -1.0 : 1.0;
        const std::uint32_t expected =
            exponent == 0x1F ? ((h & 0x8000u) << 16) | 0x7F800000u | (mantissa << 13)
            : std::bit_cast<std::uint32_t>(static_cast<float>(
                  exponent == 0 ? sign * std::ldexp(double(mantissa), -24)
                                : sign * std::ldexp(double(mantissa + 1024), int(exponent) - 25)));
        const std::uint32_t got = std::bit_cast<std::uint32_t>(f16_to_f32(bits));
        if (got != expected || got != std::bit_cast<std::uint32_t>(f16_to_f32_portable(bits)))
            QFAIL(qPrintable(QStringLiteral("f16 %1: got %2, expected %3").arg(h, 4, 16).arg(got, 8, 16)
                                 .arg(expected, 8, 16)));
    }
}

void TestKernelOps::f16_rounding_matches_definition() {
    // Every f16 value, every midpoint between neighbours (ties to even) and
    // its float neighbours, then random floats over the whole range.
    std::vector<float> inputs;
    for (std::uint32_t h = 0; h < 0x7C00; ++h) {
        const float lo = f16_to_f32(static_cast<std::uint16_t>(h));
        const float hi = f16_to_f32(static_cast<std::uint16_t>(h + 1));
        const float mid = lo + (hi - lo) / 2; // exact in float
        for (const float v : {lo, mid, std::nextafter(mid, 0.0f), std::nextafter(mid, 1e9f)}) {
            inputs.push_back(v);
            inputs.push_back(-v);
        }
    }
    std::mt19937 rng(6);
    for (int i = 0; i < 200000; ++i)
        inputs.push_back(from_bits(static_cast<std::uint32_t>(rng()) & 0xBFFFFFFFu)); // |x| < 2 mostly
    for (int i = 0; i < 200000; ++i)
        inputs.push_back(from_bits(static_cast<std::uint32_t>(rng())));
    for (const float v : inputs) {
        if (std::isnan(v))
            continue;
        const std::uint16_t expected = kernel_test::f16_bits(v);
        if (f32_to_f16(v) != expected || f32_to_f16_portable(v) != expected)
            QFAIL(qPrintable(QStringLiteral("%1: got %2, expected %3").arg(static_cast<double>(v), 0, 'g', 9)
                                 .arg(f32_to_f16(v), 4, 16).arg(expected, 4, 16)));
    }
    // write_kv's f16 path (F16C under AVX2) rounds the same way.
    for (const SimdPath path : kernel_test::available_paths()) {
        kernel_test::PathScope scope(path);
        const std::vector<std::uint16_t> stored = stored_f16(inputs);
        for (std::size_t i = 0; i < inputs.size(); ++i)
            if (!std::isnan(inputs[i]) && stored[i] != kernel_test::f16_bits(inputs[i]))
                QFAIL(qPrintable(QStringLiteral("%1 path, %2: stored %3, expected %4")
                                     .arg(to_string(path)).arg(static_cast<double>(inputs[i]), 0, 'g', 9)
                                     .arg(stored[i], 4, 16).arg(kernel_test::f16_bits(inputs[i]), 4, 16)));
    }
}

void TestKernelOps::f16_rounding_edge_cases() {
    const float inf = std::numeric_limits<float>::infinity();
    QCOMPARE(f32_to_f16(0.0f), std::uint16_t{0x0000});
    QCOMPARE(f32_to_f16(-0.0f), std::uint16_t{0x8000});
    QCOMPARE(f32_to_f16(65504.0f), std::uint16_t{0x7BFF});
    QCOMPARE(f32_to_f16(65519.996f), std::uint16_t{0x7BFF}); // just below the midpoint
    QCOMPARE(f32_to_f16(65520.0f), std::uint16_t{0x7C00});   // the midpoint ties to "even" inf
    QCOMPARE(f32_to_f16(1e10f), std::uint16_t{0x7C00});
    QCOMPARE(f32_to_f16(-inf), std::uint16_t{0xFC00});
    QCOMPARE(f32_to_f16(std::ldexp(1.0f, -24)), std::uint16_t{0x0001}); // smallest subnormal
    QCOMPARE(f32_to_f16(std::ldexp(1.0f, -25)), std::uint16_t{0x0000}); // half of it ties to 0
    QCOMPARE(f32_to_f16(std::ldexp(1.5f, -25)), std::uint16_t{0x0001});
    QCOMPARE(f32_to_f16(std::ldexp(1.0f, -14)), std::uint16_t{0x0400}); // smallest normal
    const std::uint16_t nan = f32_to_f16(std::numeric_limits<float>::quiet_NaN());
    QVERIFY((nan & 0x7C00) == 0x7C00 && (nan & 0x03FF) != 0);
    QCOMPARE(f32_to_f16(from_bits(0x7F800001u)) & 0x7E00, 0x7E00); // signalling NaN is quieted
}

QTEST_APPLESS_MAIN(TestKernelOps)
#include "test_kernel_ops.moc"
