// YaRN RoPE (rope.h's RopeYarn) against llama.cpp's computation written
// out step by step in double: ggml_rope_yarn_corr_dims (ggml.c),
// rope_yarn_ramp and rope_yarn (ggml-cpu ops.cpp, ext_factor 1 as
// llama-context.cpp sets it for "yarn"), and llama_context's
// yarn_attn_factor (get_mscale, the yarn_log_multiplier ratio, the
// cancelling 1 / (1 + 0.1 ln s), rope.scaling.attn_factor), multiplied
// together as llama.cpp does rather than as the kernel's one net factor.
// Shapes: gpt-oss's (neox, 64 of 64, base 150000, factor 32, original
// context 4096), a DeepSeek-like one with a log multiplier, one with
// per-pair factors and an attn_factor, a partial rotation with other
// betas, and a factor below 1. Also gpt-oss's ramp by hand (pairs up to
// 8 unscaled, from 18 on scaled by 1/32, between them a straight blend)
// and its magnitude 1 + 0.1 ln 32, so that a mistake shared by the kernel
// and the reference above would still show.
#include <QTest>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numbers>
#include <optional>
#include <stdexcept>
#include <vector>

#include "kernels/cpu/rope.h"

using namespace kvscope::kernels::cpu;

namespace {

// cos and sin of pair i at `position`, as llama.cpp computes them for a
// "yarn" model, in double.
struct LlamaYarn {
    double theta_base, freq_scale, attn_factor, original_context, beta_fast, beta_slow, log_mul;
    std::size_t rot_dim;
    const float* factors;

    // ggml_rope_yarn_corr_dim: where a rotation `beta` times around the
    // original context falls among the dimensions.
    double corr_dim(double beta) const {
        return static_cast<double>(rot_dim) * std::log(original_context / (beta * 2.0 * std::numbers::pi)) /
               (2.0 * std::log(theta_base));
    }
    // llama-context.cpp's yarn_attn_factor, llama's get_mscale within.
    double yarn_attn_factor() const {
        const double factor = 1.0 / freq_scale;
        const auto get_mscale = [](double scale, double mscale) {
            return scale <= 1.0 ? 1.0 : 0.1 * mscale * std::log(scale) + 1.0;
        };
        double f = log_mul != 0.0 ? get_mscale(factor, 1.0) / get_mscale(factor, log_mul) : get_mscale(factor, 1.0);
        f *= 1.0 / (1.0 + 0.1 * std::log(factor));
        return f * attn_factor;
    }
    std::pair<double, double> cos_sin(std::uint32_t position, std::size_t i) const {
        const double low = std::max(0.0, std::floor(corr_dim(beta_fast)));
        const double high = std::min(static_cast<double>(rot_dim) - 1.0, std::ceil(corr_dim(beta_slow)));
        const double theta_extrap = position *
                                    std::pow(theta_base, -2.0 * static_cast<double>(i) / static_cast<double>(rot_dim)) /
                                    (factors != nullptr ? factors[i] : 1.0);
        const double theta_interp = freq_scale * theta_extrap;
        const double y = (static_cast<double>(i) - low) / std::max(0.001, high - low);
        const double ramp_mix = 1.0 - std::min(1.0, std::max(0.0, y)); // times ext_factor 1
        const double theta = theta_interp * (1.0 - ramp_mix) + theta_extrap * ramp_mix;
        const double mscale = yarn_attn_factor() * (1.0 + 0.1 * std::log(1.0 / freq_scale));
        return {std::cos(theta) * mscale, std::sin(theta) * mscale};
    }
};

RopeFrequencies gpt_oss() {
    return {150000.0f, 1.0f / 32.0f, nullptr, 1.0f, RopeYarn{4096, 32.0f, 1.0f, 0.0f}};
}

const std::vector<std::uint32_t> kPositions{0, 1, 77, 4095, 4096, 100000, 131071};

} // namespace

class TestRopeYarn : public QObject {
    Q_OBJECT
private slots:
    void matches_llamacpp_data();
    void matches_llamacpp();
    void gpt_oss_ramp_by_hand();
    void rejects_bad_values();
};

void TestRopeYarn::matches_llamacpp_data() {
    QTest::addColumn<int>("rot_dim");
    QTest::addColumn<float>("theta");
    QTest::addColumn<float>("factor");
    QTest::addColumn<int>("original_context");
    QTest::addColumn<float>("beta_fast");
    QTest::addColumn<float>("beta_slow");
    QTest::addColumn<float>("log_mul");
    QTest::addColumn<float>("attn_factor");
    QTest::addColumn<double>("largest_factor"); // 0: no per-pair factors
    // Ramps (low, high) in pairs: (8, 18), (10, 23), (17, 34), (5, 9), (10, 23).
    QTest::newRow("gpt-oss") << 64 << 150000.0f << 32.0f << 4096 << 32.0f << 1.0f << 0.0f << 1.0f << 0.0;
    QTest::newRow("log multiplier") << 64 << 10000.0f << 40.0f << 4096 << 32.0f << 1.0f << 0.707f << 1.0f << 0.0;
    QTest::newRow("factors and attn_factor") << 128 << 1000000.0f << 4.0f << 8192 << 32.0f << 1.0f << 0.0f << 0.9f
                                             << 3.0;
    QTest::newRow("partial, other betas") << 32 << 10000.0f << 8.0f << 2048 << 16.0f << 2.0f << 0.0f << 1.0f << 0.0;
    QTest::newRow("factor below 1") << 64 << 10000.0f << 0.5f << 4096 << 32.0f << 1.0f << 0.0f << 1.0f << 0.0;
}

void TestRopeYarn::matches_llamacpp() {
    QFETCH(int, rot_dim);
    QFETCH(float, theta);
    QFETCH(float, factor);
    QFETCH(int, original_context);
    QFETCH(float, beta_fast);
    QFETCH(float, beta_slow);
    QFETCH(float, log_mul);
    QFETCH(float, attn_factor);
    QFETCH(double, largest_factor);
    const auto rot = static_cast<std::size_t>(rot_dim), pairs = rot / 2;
    std::vector<float> factors(pairs);
    for (std::size_t i = 0; i < pairs; ++i)
        factors[i] = static_cast<float>(std::pow(largest_factor, static_cast<double>(i) / static_cast<double>(pairs - 1)));
    const float* per_pair = largest_factor > 0 ? factors.data() : nullptr;
    const RopeFrequencies f{theta, 1.0f / factor, per_pair, attn_factor,
                            RopeYarn{static_cast<std::uint32_t>(original_context), beta_fast, beta_slow, log_mul}};
    const LlamaYarn ref{theta,          f.freq_scale, attn_factor, static_cast<double>(original_context),
                        beta_fast,      beta_slow,    log_mul,     rot,
                        per_pair};
    std::vector<float> table;
    rope_angles(kPositions.data(), kPositions.size(), rot, f, table);
    QCOMPARE(table.size(), kPositions.size() * rot);
    for (std::size_t t = 0; t < kPositions.size(); ++t)
        for (std::size_t i = 0; i < pairs; ++i) {
            const auto [cos, sin] = ref.cos_sin(kPositions[t], i);
            // Rounded to float once, from a magnitude <= 1.35: an ulp of
            // 1.35 is 1.2e-7; the angles' double error is far below.
            const float* got = table.data() + t * rot + 2 * i;
            QVERIFY2(std::fabs(got[0] - cos) <= 1.5e-7 && std::fabs(got[1] - sin) <= 1.5e-7,
                     qPrintable(QStringLiteral("position %1, pair %2: (%3, %4), llama.cpp's (%5, %6)")
                                    .arg(kPositions[t]).arg(i).arg(got[0], 0, 'g', 9).arg(got[1], 0, 'g', 9)
                                    .arg(cos, 0, 'g', 9).arg(sin, 0, 'g', 9)));
        }
}

// gpt-oss: corr(32) = 64 ln(4096 / 64 pi) / (2 ln 150000) = 8.09 and
// corr(1) = 17.40, so the ramp runs from pair 8 (floor) to 18 (ceil); cos
// and sin are scaled by 1 + 0.1 ln 32.
void TestRopeYarn::gpt_oss_ramp_by_hand() {
    const double magnitude = 1.0 + 0.1 * std::log(32.0);
    const std::uint32_t position = 3000;
    std::vector<float> table;
    rope_angles(&position, 1, 64, gpt_oss(), table);
    const auto expect_angle = [&](std::size_t i, double angle, const char* where) {
        QVERIFY2(std::fabs(table[2 * i] - magnitude * std::cos(angle)) <= 1.5e-7 &&
                     std::fabs(table[2 * i + 1] - magnitude * std::sin(angle)) <= 1.5e-7,
                 qPrintable(QStringLiteral("pair %1 (%2)").arg(i).arg(where)));
    };
    for (std::size_t i = 0; i < 32; ++i) {
        const double trained = position * std::pow(150000.0, -static_cast<double>(i) / 32.0);
        if (i <= 8)
            expect_angle(i, trained, "below the ramp: unscaled");
        else if (i >= 18)
            expect_angle(i, trained / 32.0, "above the ramp: scaled by 1/32");
        else {
            const double extrapolated = 1.0 - (static_cast<double>(i) - 8.0) / 10.0;
            expect_angle(i, trained * (extrapolated + (1.0 - extrapolated) / 32.0), "inside the ramp: blended");
        }
    }
    const std::uint32_t zero = 0;
    rope_angles(&zero, 1, 64, gpt_oss(), table);
    QCOMPARE(table[0], static_cast<float>(magnitude));
    QCOMPARE(table[1], 0.0f);
}

void TestRopeYarn::rejects_bad_values() {
    const std::uint32_t p = 5;
    std::vector<float> table;
    const auto with = [](RopeYarn yarn) {
        RopeFrequencies f = gpt_oss();
        f.yarn = yarn;
        return f;
    };
    for (const RopeFrequencies& bad :
         {with({0, 32.0f, 1.0f, 0.0f}), with({4096, 0.0f, 1.0f, 0.0f}), with({4096, 32.0f, -1.0f, 0.0f}),
          with({4096, NAN, 1.0f, 0.0f}), with({4096, 32.0f, INFINITY, 0.0f}), with({4096, 32.0f, 1.0f, NAN})})
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, rope_angles(&p, 1, 64, bad, table));
    rope_angles(&p, 1, 64, gpt_oss(), table); // and the good one passes
}

QTEST_APPLESS_MAIN(TestRopeYarn)
#include "test_rope_yarn.moc"
