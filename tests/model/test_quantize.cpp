// quantize_row: encoding then decoding stays within the format's step, and the block bytes follow ggml's layout.
#include <QtTest>

#include <cmath>
#include <random>
#include <vector>

#include "engine/core/error.h"
#include "engine/model/ggml_type.h"
#include "engine/model/quantize.h"

using namespace kvscope;

class TestQuantize : public QObject {
    Q_OBJECT
private slots:
    void round_trip_within_a_step_data();
    void round_trip_within_a_step();
    void q8_0_block_bytes_by_hand();
    void q4_0_block_bytes_by_hand();
    void rejects_partial_blocks_and_unknown_types();
};

void TestQuantize::round_trip_within_a_step_data() {
    QTest::addColumn<int>("type");
    // Largest error, relative to |x| (floating formats) or to the block's
    // max |x| (block formats). Half a step, plus for Q8_0 the f16 rounding
    // of the scale (2^-11 relative, times up to 127 steps); Q4_0 maps the
    // largest magnitude to -8, so values of the other sign near +8 clamp to
    // 7: up to a whole step.
    QTest::addColumn<double>("bound");
    QTest::newRow("F16") << int(GgmlType::F16) << 0.5 / 1024;
    QTest::newRow("BF16") << int(GgmlType::BF16) << 0.5 / 128;
    QTest::newRow("Q8_0") << int(GgmlType::Q8_0) << (0.5 + 127.0 / 2048) / 127;
    QTest::newRow("Q4_0") << int(GgmlType::Q4_0) << (1.0 + 8.0 / 2048) / 8;
}

void TestQuantize::round_trip_within_a_step() {
    QFETCH(int, type);
    QFETCH(double, bound);
    const auto t = static_cast<GgmlType>(type);
    std::mt19937 rng(5);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> x(32 * 64), back(x.size());
    for (float& v : x)
        v = normal(rng);
    std::vector<std::byte> encoded(row_bytes(t, x.size()));
    quantize_row(t, x.data(), encoded.data(), x.size());
    dequantize_row(t, encoded.data(), back.data(), x.size());
    for (std::size_t b = 0; b < x.size(); b += 32) {
        float amax = 0;
        for (std::size_t i = b; i < b + 32; ++i)
            amax = std::max(amax, std::abs(x[i]));
        for (std::size_t i = b; i < b + 32; ++i) {
            const double limit = (t == GgmlType::F16 || t == GgmlType::BF16 ? std::abs(x[i]) : amax) * bound;
            QVERIFY2(std::abs(back[i] - x[i]) <= limit + 1e-7,
                     qPrintable(QStringLiteral("value %1: %2 -> %3").arg(i).arg(x[i]).arg(back[i])));
        }
    }
}

void TestQuantize::q8_0_block_bytes_by_hand() {
    std::vector<float> x(32, 0.0f);
    x[0] = 1.27f; // d = 0.01
    x[1] = -0.5f; // -50
    x[2] = 0.014f; // 1.4 -> 1
    std::vector<std::uint8_t> b(34);
    quantize_row(GgmlType::Q8_0, x.data(), b.data(), 32);
    QCOMPARE(int(static_cast<std::int8_t>(b[2])), 127);
    QCOMPARE(int(static_cast<std::int8_t>(b[3])), -50);
    QCOMPARE(int(static_cast<std::int8_t>(b[4])), 1);
    QCOMPARE(int(b[5]), 0);
}

void TestQuantize::q4_0_block_bytes_by_hand() {
    std::vector<float> x(32, 0.0f);
    x[0] = -8.0f; // the largest magnitude: d = -8 / -8 = 1, q = -8 + 8 = 0
    x[16] = 3.0f; // 3 + 8 = 11, high nibble of byte 0
    x[1] = 7.6f;  // 15.6 -> 15 (clamped)
    std::vector<std::uint8_t> b(18);
    quantize_row(GgmlType::Q4_0, x.data(), b.data(), 32);
    QCOMPARE(int(b[0] | (b[1] << 8)), 0x3C00); // f16 1.0
    QCOMPARE(int(b[2]), 0x00 | (11 << 4));
    QCOMPARE(int(b[3]), 15 | (8 << 4)); // x[17] = 0 -> 8
}

void TestQuantize::rejects_partial_blocks_and_unknown_types() {
    std::vector<float> x(40);
    std::vector<std::byte> out(64);
    QVERIFY_THROWS_EXCEPTION(Error, quantize_row(GgmlType::Q8_0, x.data(), out.data(), 40));
    QVERIFY_THROWS_EXCEPTION(Error, quantize_row(GgmlType::Q6_K, x.data(), out.data(), 256));
}

QTEST_APPLESS_MAIN(TestQuantize)
#include "test_quantize.moc"
