// The sampler against hand-computed distributions, and the log-probabilities
// it reports against a long double log-softmax.
#include <QtTest>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

#include "engine/core/error.h"
#include "engine/runtime/sampler.h"

using namespace kvscope;

namespace {

std::vector<float> log_probs(std::vector<double> p) {
    std::vector<float> l;
    for (double x : p)
        l.push_back(static_cast<float>(std::log(x)));
    return l;
}

std::vector<double> frequencies(Sampler& s, const std::vector<float>& logits, int draws) {
    std::vector<double> f(logits.size(), 0);
    for (int i = 0; i < draws; ++i)
        f[static_cast<std::size_t>(s.sample(logits, {}))] += 1.0 / draws;
    return f;
}

} // namespace

class TestSampler : public QObject {
    Q_OBJECT
private slots:
    void greedy_takes_first_best();
    void repetition_penalty_moves_both_signs_down();
    void temperature_one_follows_softmax();
    void low_temperature_sharpens();
    void top_k_one_is_greedy();
    void top_p_keeps_smallest_nucleus();
    void min_p_drops_unlikely_tokens();
    void same_seed_same_tokens();
    void rejects_bad_parameters();
    void logprobs_match_a_long_double_reference();
    void logprobs_rank_ties_by_id_and_keep_minus_infinity();
    void logprobs_reject_bad_input();
};

void TestSampler::greedy_takes_first_best() {
    Sampler s({});
    QCOMPARE(s.sample(std::vector<float>{0.1f, 3.0f, -1.0f, 3.0f}, {}), 1);
}

void TestSampler::repetition_penalty_moves_both_signs_down() {
    SamplingParams p;
    p.repetition_penalty = 1.2f;
    Sampler s(p);
    const std::vector<TokenId> history{0};
    QCOMPARE(s.sample(std::vector<float>{2.0f, 1.9f}, history), 1);   // 2.0 / 1.2 = 1.67 < 1.9
    QCOMPARE(s.sample(std::vector<float>{-1.0f, -1.1f}, history), 1); // -1.0 * 1.2 = -1.2 < -1.1
    QCOMPARE(s.sample(std::vector<float>{2.0f, 1.5f}, history), 0);   // 1.67 still wins
}

void TestSampler::temperature_one_follows_softmax() {
    SamplingParams p;
    p.temperature = 1.0f;
    p.seed = 42;
    Sampler s(p);
    const auto f = frequencies(s, log_probs({0.5, 0.3, 0.2}), 20000);
    QVERIFY(std::abs(f[0] - 0.5) < 0.015);
    QVERIFY(std::abs(f[1] - 0.3) < 0.015);
    QVERIFY(std::abs(f[2] - 0.2) < 0.015);
}

void TestSampler::low_temperature_sharpens() {
    SamplingParams p;
    p.temperature = 0.5f; // p^2 renormalized: 0.25, 0.09, 0.04 -> 0.658, 0.237, 0.105
    p.seed = 1;
    Sampler s(p);
    const auto f = frequencies(s, log_probs({0.5, 0.3, 0.2}), 20000);
    QVERIFY(std::abs(f[0] - 0.25 / 0.38) < 0.015);
    QVERIFY(std::abs(f[2] - 0.04 / 0.38) < 0.015);
}

void TestSampler::top_k_one_is_greedy() {
    SamplingParams p;
    p.temperature = 1.5f;
    p.top_k = 1;
    Sampler s(p);
    const auto f = frequencies(s, log_probs({0.2, 0.5, 0.3}), 500);
    QCOMPARE(f[1], 1.0);
}

void TestSampler::top_p_keeps_smallest_nucleus() {
    SamplingParams p;
    p.temperature = 1.0f;
    p.top_p = 0.6f; // 0.5 < 0.6, 0.5 + 0.3 >= 0.6: keep the first two
    p.seed = 3;
    Sampler s(p);
    const auto f = frequencies(s, log_probs({0.5, 0.3, 0.2}), 20000);
    QCOMPARE(f[2], 0.0);
    QVERIFY(std::abs(f[0] - 0.625) < 0.015);
}

void TestSampler::min_p_drops_unlikely_tokens() {
    SamplingParams p;
    p.temperature = 1.0f;
    p.min_p = 0.5f; // floor 0.25: token 2 (0.2) goes
    p.seed = 4;
    Sampler s(p);
    const auto f = frequencies(s, log_probs({0.5, 0.3, 0.2}), 5000);
    QCOMPARE(f[2], 0.0);
    QVERIFY(f[1] > 0.3);
}

void TestSampler::same_seed_same_tokens() {
    SamplingParams p;
    p.temperature = 1.0f;
    p.seed = 99;
    const auto logits = log_probs({0.25, 0.25, 0.25, 0.25});
    Sampler a(p), b(p);
    std::vector<TokenId> ta, tb, tc;
    for (int i = 0; i < 64; ++i) {
        ta.push_back(a.sample(logits, {}));
        tb.push_back(b.sample(logits, {}));
    }
    QCOMPARE(ta, tb);
    p.seed = 100;
    Sampler c(p);
    for (int i = 0; i < 64; ++i)
        tc.push_back(c.sample(logits, {}));
    QVERIFY(ta != tc);
}

void TestSampler::rejects_bad_parameters() {
    SamplingParams p;
    p.temperature = -1;
    QVERIFY_THROWS_EXCEPTION(Error, Sampler{p});
    p = {};
    p.top_p = 0;
    QVERIFY_THROWS_EXCEPTION(Error, Sampler{p});
    p = {};
    p.repetition_penalty = 0;
    QVERIFY_THROWS_EXCEPTION(Error, Sampler{p});
    Sampler ok({});
    QVERIFY_THROWS_EXCEPTION(Error, ok.sample(std::vector<float>{}, {}));
}

// A 32000-entry vocabulary with logits spread over +-40 (float rounding
// of a float sum would show): every log-probability within 1e-5 of a
// long double log-softmax, the top list the reference's best, in order.
void TestSampler::logprobs_match_a_long_double_reference() {
    std::mt19937 rng(5);
    std::uniform_real_distribution<float> spread(-40.0f, 40.0f);
    std::vector<float> logits(32000);
    for (float& x : logits)
        x = spread(rng);
    long double sum = 0;
    const float max = *std::max_element(logits.begin(), logits.end());
    for (float x : logits)
        sum += std::exp(static_cast<long double>(x) - max);
    auto reference = [&](std::size_t i) { return static_cast<double>(logits[i] - max - std::log(sum)); };
    std::vector<std::size_t> order(logits.size());
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return logits[a] > logits[b]; });

    const PositionLogprobs p = position_logprobs(logits, 1234, 20);
    QCOMPARE(p.chosen.token, 1234);
    QVERIFY(std::abs(p.chosen.logprob - reference(1234)) < 1e-5);
    QCOMPARE(p.top.size(), std::size_t{20});
    for (std::size_t i = 0; i < p.top.size(); ++i) {
        QCOMPARE(static_cast<std::size_t>(p.top[i].token), order[i]);
        QVERIFY(std::abs(p.top[i].logprob - reference(order[i])) < 1e-5);
    }
    QVERIFY(position_logprobs(logits, 0, 0).top.empty());
}

void TestSampler::logprobs_rank_ties_by_id_and_keep_minus_infinity() {
    const float inf = std::numeric_limits<float>::infinity();
    const std::vector<float> logits{1.0f, 2.0f, -inf, 2.0f, 1.0f};
    const PositionLogprobs p = position_logprobs(logits, 2, 10); // more asked than there are
    std::vector<TokenId> ids;
    for (const TokenLogprob& t : p.top)
        ids.push_back(t.token);
    QCOMPARE(ids, (std::vector<TokenId>{1, 3, 0, 4, 2}));
    QCOMPARE(p.chosen.logprob, -inf);
    const double lse = std::log(2 * std::exp(1.0) + 2 * std::exp(2.0));
    QVERIFY(std::abs(p.top[0].logprob - (2.0 - lse)) < 1e-6);
}

void TestSampler::logprobs_reject_bad_input() {
    QVERIFY_THROWS_EXCEPTION(Error, position_logprobs(std::vector<float>{}, 0, 1));
    QVERIFY_THROWS_EXCEPTION(Error, position_logprobs(std::vector<float>{0.5f}, 1, 1));
    QVERIFY_THROWS_EXCEPTION(Error, position_logprobs(std::vector<float>{0.5f}, -1, 1));
}

QTEST_APPLESS_MAIN(TestSampler)
#include "test_sampler.moc"
