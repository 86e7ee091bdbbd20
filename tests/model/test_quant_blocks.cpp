// Dequantization of each ggml block format. Every test builds blocks from
// chosen integers and scales, packing them as the ggml layouts describe,
// and checks the result against the formula computed here in double
// precision, so a wrong bit position or scale order shows up as a mismatch.
// For the types added later (Q4_1, Q5_1, IQ4_NL, IQ4_XS, Q2_K, Q3_K,
// MXFP4), blocks that llama.cpp's quantizer wrote must also dequantize to
// llama.cpp's own floats, bit for bit (tests/data/quant_reference); for
// MXFP4, whose quantizer kvscope follows exactly, quantize_row must also
// write llama.cpp's bytes from the same floats.
#include <QTest>

#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>
#include <random>
#include <string>
#include <vector>

#include "engine/core/error.h"
#include "engine/model/ggml_type.h"
#include "engine/model/quantize.h"

using kvscope::GgmlType;

namespace {

// binary16 bits of a value that f16 represents exactly (normal numbers only),
// from the definition: (1 + fraction/1024) * 2^(exponent - 15).
std::uint16_t f16_bits(double value) {
    const std::uint16_t sign = value < 0 ? 0x8000 : 0;
    int e = 0;
    const double m = std::frexp(std::fabs(value), &e); // value = m * 2^e, m in [0.5, 1)
    const int exponent = e - 1 + 15;
    const double fraction = (m * 2 - 1) * 1024;
    if (exponent < 1 || exponent > 30 || fraction != std::floor(fraction))
        qFatal("test value %g is not an exact normal f16", value);
    return static_cast<std::uint16_t>(sign | (exponent << 10) | static_cast<int>(fraction));
}

void put16(std::string& out, int v) {
    out += static_cast<char>(v & 0xFF);
    out += static_cast<char>(v >> 8);
}

std::vector<float> dequantize(GgmlType type, const std::string& blocks, std::size_t n) {
    std::vector<float> out(n);
    kvscope::dequantize_row(type, blocks.data(), out.data(), n);
    return out;
}

void compare(const std::vector<float>& got, const std::vector<double>& expected) {
    QCOMPARE(got.size(), expected.size());
    for (std::size_t i = 0; i < got.size(); ++i) {
        const double tolerance = 1e-6 * std::max(1.0, std::fabs(expected[i]));
        if (std::fabs(got[i] - expected[i]) > tolerance)
            QFAIL(qPrintable(QStringLiteral("value %1: got %2, expected %3")
                                 .arg(i).arg(static_cast<double>(got[i]), 0, 'g', 9)
                                 .arg(expected[i], 0, 'g', 9)));
    }
}

std::vector<int> random_ints(std::mt19937& rng, std::size_t n, int lo, int hi) {
    std::uniform_int_distribution<int> dist(lo, hi);
    std::vector<int> v(n);
    for (int& x : v)
        x = dist(rng);
    return v;
}

// Q4_K / Q5_K pack eight 6-bit scales and mins into 12 bytes: bytes 0-3 hold
// scales 0-3 (low 6 bits) and the top 2 bits of scales 4-7; bytes 4-7 hold
// mins 0-3 and the top 2 bits of mins 4-7; bytes 8-11 hold the low 4 bits of
// scale 4+k (low nibble) and min 4+k (high nibble).
std::string pack_k_scales(const std::vector<int>& sc, const std::vector<int>& mn) {
    std::string bytes(12, '\0');
    for (int k = 0; k < 4; ++k) {
        bytes[k] = static_cast<char>(sc[k] | ((sc[k + 4] >> 4) << 6));
        bytes[k + 4] = static_cast<char>(mn[k] | ((mn[k + 4] >> 4) << 6));
        bytes[k + 8] = static_cast<char>((sc[k + 4] & 15) | ((mn[k + 4] & 15) << 4));
    }
    return bytes;
}

} // namespace

class TestQuantBlocks : public QObject {
    Q_OBJECT

private slots:
    void typeGeometryMatchesGgml() {
        struct Row { GgmlType type; unsigned values, bytes; bool dequantizable; };
        const Row rows[] = {
            {GgmlType::F32, 1, 4, true},     {GgmlType::F16, 1, 2, true},
            {GgmlType::BF16, 1, 2, true},    {GgmlType::Q8_0, 32, 34, true},
            {GgmlType::Q4_0, 32, 18, true},  {GgmlType::Q5_0, 32, 22, true},
            {GgmlType::Q4_1, 32, 20, true},  {GgmlType::Q4_K, 256, 144, true},
            {GgmlType::Q5_K, 256, 176, true}, {GgmlType::Q6_K, 256, 210, true},
            {GgmlType::Q2_K, 256, 84, true}, {GgmlType::Q3_K, 256, 110, true},
            {GgmlType::Q5_1, 32, 24, true},  {GgmlType::IQ4_NL, 32, 18, true},
            {GgmlType::IQ4_XS, 256, 136, true}, {GgmlType::MXFP4, 32, 17, true},
            {GgmlType::Q8_1, 32, 36, false},
            {GgmlType::IQ2_XXS, 256, 66, false},
        };
        for (const Row& r : rows) {
            const auto& t = kvscope::traits(r.type);
            QCOMPARE(t.block_values, r.values);
            QCOMPARE(t.block_bytes, r.bytes);
            QCOMPARE(t.dequantizable, r.dequantizable);
        }
        QCOMPARE(kvscope::to_string(GgmlType::Q4_K), std::string_view("Q4_K"));
        QVERIFY(kvscope::find_ggml_type(4) == nullptr); // Q4_2, removed from ggml
        QVERIFY(kvscope::find_ggml_type(1000) == nullptr);
        QCOMPARE(kvscope::dequantizable_type_names(),
                 std::string("F32, F16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL, "
                             "IQ4_XS, BF16, MXFP4"));
    }

    void tensorBytes() {
        const std::vector<std::uint64_t> f32_shape{3, 4};
        QCOMPARE(kvscope::tensor_bytes(GgmlType::F32, f32_shape), 48u);
        const std::vector<std::uint64_t> q8_shape{64, 2};
        QCOMPARE(kvscope::tensor_bytes(GgmlType::Q8_0, q8_shape), 2u * 2u * 34u);
        const std::vector<std::uint64_t> q4k_shape{512, 3, 2};
        QCOMPARE(kvscope::tensor_bytes(GgmlType::Q4_K, q4k_shape), 2u * 144u * 3u * 2u);
        QCOMPARE(kvscope::row_bytes(GgmlType::Q6_K, 256), 210u);
        QVERIFY_THROWS_EXCEPTION(kvscope::Error, kvscope::row_bytes(GgmlType::Q4_0, 100));
        const std::vector<std::uint64_t> huge{1ull << 40, 1ull << 40};
        QVERIFY_THROWS_EXCEPTION(kvscope::Error, kvscope::tensor_bytes(GgmlType::F32, huge));
    }

    void f16KnownValues() {
        const std::pair<std::uint16_t, double> cases[] = {
            {0x3C00, 1.0},      {0xC000, -2.0},          {0x7BFF, 65504.0},
            {0x0400, 0x1p-14},  {0x0001, 0x1p-24},       {0x83FF, -1023 * 0x1p-24},
            {0x3555, 0.333251953125}, {0x0000, 0.0},
        };
        std::string bytes;
        for (const auto& c : cases)
            put16(bytes, c.first);
        const auto got = dequantize(GgmlType::F16, bytes, std::size(cases));
        for (std::size_t i = 0; i < std::size(cases); ++i)
            QCOMPARE(static_cast<double>(got[i]), cases[i].second);

        std::string specials;
        for (int bits : {0x7C00, 0xFC00, 0x7E00, 0x8000})
            put16(specials, bits);
        const auto s = dequantize(GgmlType::F16, specials, 4);
        QVERIFY(std::isinf(s[0]) && s[0] > 0);
        QVERIFY(std::isinf(s[1]) && s[1] < 0);
        QVERIFY(std::isnan(s[2]));
        QVERIFY(s[3] == 0.0f && std::signbit(s[3]));
    }

    void bf16KnownValues() {
        std::string bytes;
        for (int bits : {0x3F80, 0xC049, 0x0000, 0x7F80})
            put16(bytes, bits);
        const auto got = dequantize(GgmlType::BF16, bytes, 4);
        QCOMPARE(got[0], 1.0f);
        QCOMPARE(got[1], -3.140625f); // sign 1, exponent 128, mantissa 0x49 << 16
        QCOMPARE(got[2], 0.0f);
        QVERIFY(std::isinf(got[3]));
    }

    void f32IsCopied() {
        const std::vector<float> values{1.5f, -2.25f, 3e-7f};
        std::string bytes(reinterpret_cast<const char*>(values.data()), 12);
        QCOMPARE(dequantize(GgmlType::F32, bytes, 3), values);
    }

    void q8_0() {
        std::mt19937 rng(1);
        const double d[] = {0.5, -0.0078125};
        std::string blocks;
        std::vector<double> expected;
        for (double scale : d) {
            const auto q = random_ints(rng, 32, -128, 127);
            put16(blocks, f16_bits(scale));
            for (int v : q) {
                blocks += static_cast<char>(static_cast<std::int8_t>(v));
                expected.push_back(v * scale);
            }
        }
        compare(dequantize(GgmlType::Q8_0, blocks, 64), expected);
    }

    // 4-bit quants: byte j holds value j in its low nibble and value j+16 in
    // its high nibble; value = (q - 8) * d.
    void q4_0() {
        std::mt19937 rng(2);
        const double d[] = {0.25, 3.0};
        std::string blocks;
        std::vector<double> expected;
        for (double scale : d) {
            const auto q = random_ints(rng, 32, 0, 15);
            put16(blocks, f16_bits(scale));
            for (int j = 0; j < 16; ++j)
                blocks += static_cast<char>(q[j] | (q[j + 16] << 4));
            for (int v : q)
                expected.push_back((v - 8) * scale);
        }
        compare(dequantize(GgmlType::Q4_0, blocks, 64), expected);
    }

    // 5-bit quants: low 4 bits as in Q4_0, the fifth bit of value i is bit i
    // of the little-endian u32 before them; value = (q - 16) * d.
    void q5_0() {
        std::mt19937 rng(3);
        const double d[] = {0.125, -1.5};
        std::string blocks;
        std::vector<double> expected;
        for (double scale : d) {
            const auto q = random_ints(rng, 32, 0, 31);
            put16(blocks, f16_bits(scale));
            std::uint32_t high = 0;
            for (int i = 0; i < 32; ++i)
                high |= static_cast<std::uint32_t>(q[i] >> 4) << i;
            for (int b = 0; b < 4; ++b)
                blocks += static_cast<char>((high >> (8 * b)) & 0xFF);
            for (int j = 0; j < 16; ++j)
                blocks += static_cast<char>((q[j] & 15) | ((q[j + 16] & 15) << 4));
            for (int v : q)
                expected.push_back((v - 16) * scale);
        }
        compare(dequantize(GgmlType::Q5_0, blocks, 64), expected);
    }

    // Q4_K: value i is in sub-block s = i/32 and equals
    // d * scale[s] * q - dmin * min[s]. Within each 64-value chunk c, the
    // first 32 values are the low nibbles of qs[32c .. 32c+31], the next 32
    // the high nibbles.
    void q4_k() { k_quant(GgmlType::Q4_K, 4); }

    // Q5_K: as Q4_K, plus a fifth bit: for value i in chunk c at position l
    // (i % 32), bit 2c (first half of the chunk) or 2c+1 (second half) of
    // qh[l].
    void q5_k() { k_quant(GgmlType::Q5_K, 5); }

    // Q6_K: value i = d * scales[i/16] * (q - 32). In half h (128 values),
    // quarter k (32 values) at position l: low 4 bits from
    // ql[64h + l + 32*(k%2)], low nibble for k < 2, high nibble otherwise;
    // high 2 bits are bits 2k..2k+1 of qh[32h + l].
    void q6_k() {
        std::mt19937 rng(6);
        const double d[] = {0.0009765625, -0.5};
        std::string blocks;
        std::vector<double> expected;
        for (double scale : d) {
            const auto q = random_ints(rng, 256, 0, 63);
            const auto sc = random_ints(rng, 16, -128, 127);
            std::string ql(128, '\0'), qh(64, '\0');
            for (int i = 0; i < 256; ++i) {
                const int h = i / 128, k = (i % 128) / 32, l = i % 32;
                const int low_byte = 64 * h + l + 32 * (k % 2);
                const int low_shift = k < 2 ? 0 : 4;
                ql[low_byte] = static_cast<char>(ql[low_byte] | ((q[i] & 15) << low_shift));
                qh[32 * h + l] = static_cast<char>(qh[32 * h + l] | ((q[i] >> 4) << (2 * k)));
                expected.push_back(scale * sc[i / 16] * (q[i] - 32));
            }
            blocks += ql + qh;
            for (int s : sc)
                blocks += static_cast<char>(static_cast<std::int8_t>(s));
            put16(blocks, f16_bits(scale));
        }
        QCOMPARE(blocks.size(), 2u * 210u);
        compare(dequantize(GgmlType::Q6_K, blocks, 512), expected);
    }

    // Q4_1: as Q4_0's nibbles, value = q * d + m (a min, no offset).
    void q4_1() { affine32(GgmlType::Q4_1, 4); }

    // Q5_1: Q5_0's fifth bits (a u32 after d and m), value = q * d + m.
    void q5_1() { affine32(GgmlType::Q5_1, 5); }

    // IQ4_NL: Q4_0's nibbles index a 16-entry table; value = d * table[q].
    void iq4_nl() {
        std::mt19937 rng(7);
        std::string blocks;
        std::vector<double> expected;
        for (double scale : {0.0078125, -2.5}) {
            const auto q = random_ints(rng, 32, 0, 15);
            put16(blocks, f16_bits(scale));
            for (int j = 0; j < 16; ++j)
                blocks += static_cast<char>(q[j] | (q[j + 16] << 4));
            for (int v : q)
                expected.push_back(scale * kIq4nl[v]);
        }
        compare(dequantize(GgmlType::IQ4_NL, blocks, 64), expected);
    }

    // MXFP4: Q4_0's nibbles are FP4 E2M1 codes (sign, 2 exponent bits,
    // 1 mantissa bit), all sharing the E8M0 scale 2^(e - 127): from the
    // OCP format's definition, here in double, then rounded to float. e = 1
    // makes the values subnormal floats and e = 255 huge ones (beyond 2^128
    // infinite): compared exactly.
    void mxfp4() {
        std::mt19937 rng(9);
        std::string blocks;
        std::vector<double> expected;
        const auto e2m1 = [](int c) {
            const int exponent = (c >> 1) & 3, mantissa = c & 1;
            const double magnitude = exponent == 0 ? 0.5 * mantissa : (1 + 0.5 * mantissa) * std::ldexp(1.0, exponent - 1);
            return c & 8 ? -magnitude : magnitude;
        };
        for (const int e : {127, 1, 255, 0, 140}) {
            const auto q = random_ints(rng, 32, 0, 15);
            blocks += static_cast<char>(e);
            for (int j = 0; j < 16; ++j)
                blocks += static_cast<char>(q[j] | (q[j + 16] << 4));
            for (int v : q)
                expected.push_back(e2m1(v) * std::ldexp(1.0, e - 127));
        }
        const std::vector<float> got = dequantize(GgmlType::MXFP4, blocks, expected.size());
        for (std::size_t i = 0; i < got.size(); ++i)
            QVERIFY2(got[i] == static_cast<float>(expected[i]),
                     qPrintable(QStringLiteral("value %1: got %2, expected %3").arg(i)
                                    .arg(static_cast<double>(got[i])).arg(expected[i])));
    }

    // IQ4_XS: 8 sub-blocks of 32 with 6-bit scales ls (value ls - 32): low
    // 4 bits in nibble j % 2 of scales_l[j / 2], top 2 bits at 2j of the u16
    // scales_h; sub-block j's 16 bytes of nibbles as IQ4_NL's.
    void iq4_xs() {
        std::mt19937 rng(8);
        std::string blocks;
        std::vector<double> expected;
        for (double scale : {0.001953125, -0.75}) {
            const auto q = random_ints(rng, 256, 0, 15);
            auto ls = random_ints(rng, 8, 0, 63);
            ls[2] = 0;  // -32
            ls[5] = 63; // 31
            int high = 0;
            std::string low(4, '\0');
            for (int j = 0; j < 8; ++j) {
                high |= (ls[j] >> 4) << (2 * j);
                low[j / 2] = static_cast<char>(low[j / 2] | ((ls[j] & 15) << (4 * (j % 2))));
            }
            put16(blocks, f16_bits(scale));
            put16(blocks, high);
            blocks += low;
            for (int j = 0; j < 8; ++j)
                for (int l = 0; l < 16; ++l)
                    blocks += static_cast<char>(q[32 * j + l] | (q[32 * j + 16 + l] << 4));
            for (int i = 0; i < 256; ++i)
                expected.push_back(scale * (ls[i / 32] - 32) * kIq4nl[q[i]]);
        }
        QCOMPARE(blocks.size(), 2u * 136u);
        compare(dequantize(GgmlType::IQ4_XS, blocks, 512), expected);
    }

    // Q2_K: 16 sub-blocks of 16; scales[s] = scale (low nibble) | min (high);
    // value i = 128h + 32k + l has its 2 bits at 2k of qs[32h + l];
    // value = d * scale * q - dmin * min; d and dmin (f16) come last.
    void q2_k() {
        std::mt19937 rng(9);
        std::string blocks;
        std::vector<double> expected;
        for (const auto& [scale, min_scale] : {std::pair{0.03125, 0.015625}, std::pair{-1.5, 0.5}}) {
            const auto q = random_ints(rng, 256, 0, 3);
            const auto sc = random_ints(rng, 16, 0, 15);
            const auto mn = random_ints(rng, 16, 0, 15);
            std::string qs(64, '\0');
            for (int s = 0; s < 16; ++s)
                blocks += static_cast<char>(sc[s] | (mn[s] << 4));
            for (int i = 0; i < 256; ++i) {
                const int h = i / 128, k = i % 128 / 32, l = i % 32;
                qs[32 * h + l] = static_cast<char>(qs[32 * h + l] | (q[i] << (2 * k)));
                expected.push_back(scale * sc[i / 16] * q[i] - min_scale * mn[i / 16]);
            }
            blocks += qs;
            put16(blocks, f16_bits(scale));
            put16(blocks, f16_bits(min_scale));
        }
        QCOMPARE(blocks.size(), 2u * 84u);
        compare(dequantize(GgmlType::Q2_K, blocks, 512), expected);
    }

    // Q3_K: hmask[32], qs[64], 12 bytes of 6-bit scales, d. Value i =
    // 128h + 32k + l: low 2 bits at 2k of qs[32h + l], third bit at 4h + k
    // of hmask[l]; q = low2 - 4 when that bit is clear; value =
    // d * (scale[i / 16] - 32) * q. Scale 4k + i (i < 4): low 4 bits in
    // nibble k / 2 of byte 4 (k % 2) + i, top 2 bits at 2k of byte 8 + i.
    void q3_k() {
        std::mt19937 rng(10);
        std::string blocks;
        std::vector<double> expected;
        for (double scale : {0.0625, -0.25}) {
            const auto u = random_ints(rng, 256, 0, 7); // q + 4
            auto sc = random_ints(rng, 16, 0, 63);
            sc[3] = 0;
            sc[12] = 63;
            std::string hmask(32, '\0'), qs(64, '\0'), packed(12, '\0');
            for (int i = 0; i < 256; ++i) {
                const int h = i / 128, k = i % 128 / 32, l = i % 32;
                qs[32 * h + l] = static_cast<char>(qs[32 * h + l] | ((u[i] & 3) << (2 * k)));
                hmask[l] = static_cast<char>(hmask[l] | ((u[i] >> 2) << (4 * h + k)));
                expected.push_back(scale * (sc[i / 16] - 32) * (u[i] - 4));
            }
            for (int k = 0; k < 4; ++k)
                for (int i = 0; i < 4; ++i) {
                    const int v = sc[4 * k + i];
                    packed[4 * (k % 2) + i] = static_cast<char>(packed[4 * (k % 2) + i] | ((v & 15) << (4 * (k / 2))));
                    packed[8 + i] = static_cast<char>(packed[8 + i] | ((v >> 4) << (2 * k)));
                }
            blocks += hmask + qs + packed;
            put16(blocks, f16_bits(scale));
        }
        QCOMPARE(blocks.size(), 2u * 110u);
        compare(dequantize(GgmlType::Q3_K, blocks, 512), expected);
    }

    // tests/data/quant_reference/<type>.txt (make.sh there writes them):
    // "type NAME", "bytes HEX" (blocks llama.cpp's quantizer wrote),
    // "floats HEX..." (the IEEE bits llama.cpp's dequantization gives) and
    // for MXFP4 "input HEX..." (the floats it quantized).
    void matchesLlamaCppBitForBit_data() {
        QTest::addColumn<QString>("file");
        for (const char* name : {"q4_1", "q5_1", "iq4_nl", "iq4_xs", "q2_k", "q3_k", "mxfp4"})
            QTest::newRow(name) << QString(name);
    }
    void matchesLlamaCppBitForBit() {
        QFETCH(QString, file);
        std::ifstream in((QStringLiteral(KVSCOPE_TEST_DATA "/quant_reference/") + file + ".txt").toStdString());
        QVERIFY2(in, "reference file missing");
        std::string line, type_name, bytes;
        std::vector<std::uint32_t> expected, input;
        while (std::getline(in, line)) {
            std::istringstream words(line);
            std::string key;
            words >> key;
            if (key == "type")
                words >> type_name;
            else if (key == "bytes")
                words >> bytes;
            else if (key == "floats" || key == "input")
                for (std::string hex; words >> hex;)
                    (key == "input" ? input : expected).push_back(static_cast<std::uint32_t>(std::stoul(hex, nullptr, 16)));
        }
        // ggml prints "q2_K"; kvscope's names are upper case.
        const std::string upper = QString::fromStdString(type_name).toUpper().toStdString();
        QCOMPARE(QString::fromStdString(upper).toLower(), file);
        const kvscope::GgmlTypeTraits* type = nullptr;
        for (std::uint32_t raw = 0; raw < 64; ++raw)
            if (const auto* t = kvscope::find_ggml_type(raw); t != nullptr && t->name == upper)
                type = t;
        QVERIFY2(type != nullptr, type_name.c_str());
        std::string blocks;
        for (std::size_t i = 0; i + 1 < bytes.size(); i += 2)
            blocks += static_cast<char>(std::stoi(bytes.substr(i, 2), nullptr, 16));
        QVERIFY(!expected.empty());
        QCOMPARE(blocks.size(), expected.size() / type->block_values * type->block_bytes);
        const std::vector<float> got = dequantize(type->type, blocks, expected.size());
        for (std::size_t i = 0; i < got.size(); ++i) {
            std::uint32_t bits;
            std::memcpy(&bits, &got[i], sizeof bits);
            if (bits != expected[i])
                QFAIL(qPrintable(QStringLiteral("value %1: got %2 (%3), llama.cpp %4").arg(i).arg(bits, 8, 16, QChar('0'))
                                     .arg(static_cast<double>(got[i])).arg(expected[i], 8, 16, QChar('0'))));
        }
        if (input.empty())
            return;
        QCOMPARE(input.size(), expected.size());
        std::vector<float> values(input.size());
        std::memcpy(values.data(), input.data(), input.size() * sizeof(float));
        std::string written(blocks.size(), '\0');
        kvscope::quantize_row(type->type, values.data(), written.data(), values.size());
        for (std::size_t b = 0; b < blocks.size() / type->block_bytes; ++b) {
            const std::size_t at = b * type->block_bytes;
            QVERIFY2(written.compare(at, type->block_bytes, blocks, at, type->block_bytes) == 0,
                     qPrintable(QStringLiteral("block %1: kvscope wrote %2, llama.cpp %3").arg(b)
                                    .arg(QByteArray::fromStdString(written.substr(at, type->block_bytes)).toHex())
                                    .arg(QByteArray::fromStdString(blocks.substr(at, type->block_bytes)).toHex())));
        }
    }

    void rejectsUnsupportedTypeAndPartialBlocks() {
        std::vector<float> out(64);
        const std::string zeros(1000, '\0');
        QVERIFY_THROWS_EXCEPTION(kvscope::Error,
                                 kvscope::dequantize_row(GgmlType::Q8_1, zeros.data(), out.data(), 32));
        QVERIFY_THROWS_EXCEPTION(kvscope::Error,
                                 kvscope::dequantize_row(GgmlType::Q8_0, zeros.data(), out.data(), 40));
    }

private:
    static constexpr int kIq4nl[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};

    // Two blocks of Q4_1 (bits 4) or Q5_1 (bits 5): d, m, [qh,] nibbles.
    static void affine32(GgmlType type, int bits) {
        std::mt19937 rng(bits + 20);
        std::string blocks;
        std::vector<double> expected;
        for (const auto& [scale, min] : {std::pair{0.125, -1.0}, std::pair{0.0078125, 0.75}}) {
            const auto q = random_ints(rng, 32, 0, (1 << bits) - 1);
            put16(blocks, f16_bits(scale));
            put16(blocks, f16_bits(min));
            if (bits == 5) {
                std::uint32_t high = 0;
                for (int i = 0; i < 32; ++i)
                    high |= static_cast<std::uint32_t>(q[i] >> 4) << i;
                for (int b = 0; b < 4; ++b)
                    blocks += static_cast<char>((high >> (8 * b)) & 0xFF);
            }
            for (int j = 0; j < 16; ++j)
                blocks += static_cast<char>((q[j] & 15) | ((q[j + 16] & 15) << 4));
            for (int v : q)
                expected.push_back(v * scale + min);
        }
        QCOMPARE(blocks.size(), 2u * kvscope::traits(type).block_bytes);
        compare(dequantize(type, blocks, 64), expected);
    }

    // Two super-blocks with random quants, scales and mins; all 6-bit scale
    // and min values including those above 15 (which need the top bits).
    static void k_quant(GgmlType type, int bits) {
        std::mt19937 rng(bits);
        const double d[][2] = {{0.015625, 0.0078125}, {-0.5, 0.25}};
        std::string blocks;
        std::vector<double> expected;
        for (const auto& [scale, min_scale] : d) {
            const auto q = random_ints(rng, 256, 0, (1 << bits) - 1);
            auto sc = random_ints(rng, 8, 0, 63);
            auto mn = random_ints(rng, 8, 0, 63);
            sc[7] = 63;
            mn[4] = 48; // top bits set, low bits clear
            put16(blocks, f16_bits(scale));
            put16(blocks, f16_bits(min_scale));
            blocks += pack_k_scales(sc, mn);
            std::string qh(32, '\0'), qs(128, '\0');
            for (int i = 0; i < 256; ++i) {
                const int c = i / 64, l = i % 32, second_half = (i % 64) / 32;
                qs[32 * c + l] = static_cast<char>(qs[32 * c + l] | ((q[i] & 15) << (4 * second_half)));
                qh[l] = static_cast<char>(qh[l] | ((q[i] >> 4) << (2 * c + second_half)));
                expected.push_back(scale * sc[i / 32] * q[i] - min_scale * mn[i / 32]);
            }
            if (bits == 5)
                blocks += qh;
            blocks += qs;
        }
        QCOMPARE(blocks.size(), 2u * kvscope::traits(type).block_bytes);
        compare(dequantize(type, blocks, 512), expected);
    }
};

QTEST_APPLESS_MAIN(TestQuantBlocks)
#include "test_quant_blocks.moc"
