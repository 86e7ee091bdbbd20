// The arithmetic of next-token accuracy on hand-made distributions whose
// perplexity and KL divergence are known in closed form, and the windows a
// long text is cut into.
#include <QtTest>

#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

#include "engine/core/error.h"
#include "engine/runtime/kv_accuracy.h"
#include "engine/runtime/perplexity.h"

using namespace kvscope;

namespace {

// Logits whose softmax is exactly `probabilities` (which sum to 1).
std::vector<float> logits_of(std::initializer_list<double> probabilities, double shift = 0) {
    std::vector<float> logits;
    for (double p : probabilities)
        logits.push_back(static_cast<float>(std::log(p) + shift));
    return logits;
}

std::vector<double> logs(std::initializer_list<double> probabilities) {
    std::vector<double> out;
    for (double p : probabilities)
        out.push_back(std::log(p));
    return out;
}

} // namespace

class TestPerplexity : public QObject {
    Q_OBJECT
private slots:
    void log_softmax_recovers_probabilities();
    void log_softmax_survives_huge_logits();
    void log_softmax_rejects_bad_logits();
    void kld_is_zero_for_identical_distributions();
    void kld_of_a_known_pair();
    void kld_skips_impossible_tokens();
    void perplexity_of_known_targets();
    void uniform_distribution_has_vocabulary_perplexity();
    void top1_agreement_counts_positions();
    void stats_reject_bad_input();
    void windows_predict_every_token_once();
    void windows_reject_short_input();
};

void TestPerplexity::log_softmax_recovers_probabilities() {
    // Adding a constant to every logit leaves the distribution unchanged.
    for (double shift : {0.0, -7.5, 30.0}) {
        const std::vector<double> lp = log_softmax(logits_of({0.1, 0.2, 0.3, 0.4}, shift));
        QCOMPARE(lp.size(), std::size_t{4});
        const double expected[] = {0.1, 0.2, 0.3, 0.4};
        for (std::size_t i = 0; i < 4; ++i)
            QVERIFY2(std::abs(std::exp(lp[i]) - expected[i]) < 1e-6, qPrintable(QString::number(i)));
    }
}

void TestPerplexity::log_softmax_survives_huge_logits() {
    // exp(1000) overflows a double; the shifted computation does not.
    const std::vector<double> lp = log_softmax(std::vector<float>{1000.0f, 1001.0f});
    const double e = std::exp(1.0);
    QVERIFY(std::abs(lp[0] - std::log(1 / (1 + e))) < 1e-12);
    QVERIFY(std::abs(lp[1] - std::log(e / (1 + e))) < 1e-12);
    // A vocabulary-sized row still sums to 1.
    std::vector<float> wide(150000);
    for (std::size_t i = 0; i < wide.size(); ++i)
        wide[i] = static_cast<float>(std::sin(double(i)) * 20);
    const std::vector<double> wlp = log_softmax(wide);
    double sum = 0;
    for (double v : wlp)
        sum += std::exp(v);
    QVERIFY(std::abs(sum - 1) < 1e-9);
}

void TestPerplexity::log_softmax_rejects_bad_logits() {
    QVERIFY_THROWS_EXCEPTION(Error, log_softmax(std::vector<float>{}));
    QVERIFY_THROWS_EXCEPTION(Error, log_softmax(std::vector<float>{1.0f, std::numeric_limits<float>::quiet_NaN()}));
    QVERIFY_THROWS_EXCEPTION(Error, log_softmax(std::vector<float>{1.0f, std::numeric_limits<float>::infinity()}));
}

void TestPerplexity::kld_is_zero_for_identical_distributions() {
    const std::vector<double> p = log_softmax(logits_of({0.05, 0.7, 0.25}));
    QCOMPARE(kl_divergence(p, p), 0.0);
}

void TestPerplexity::kld_of_a_known_pair() {
    // KL(P||Q) = sum p ln(p/q), written out for P = (1/2, 1/2), Q = (9/10, 1/10).
    const double expected = 0.5 * std::log(0.5 / 0.9) + 0.5 * std::log(0.5 / 0.1); // 0.5108...
    QVERIFY(std::abs(kl_divergence(logs({0.5, 0.5}), logs({0.9, 0.1})) - expected) < 1e-12);
    // Not symmetric: KL(Q||P) = 0.9 ln(1.8) + 0.1 ln(0.2) = 0.3681...
    const double reverse = 0.9 * std::log(1.8) + 0.1 * std::log(0.2);
    QVERIFY(std::abs(kl_divergence(logs({0.9, 0.1}), logs({0.5, 0.5})) - reverse) < 1e-12);
    // Through log_softmax of float logits: float rounding of the logits only.
    QVERIFY(std::abs(kl_divergence(log_softmax(logits_of({0.5, 0.5})), log_softmax(logits_of({0.9, 0.1}))) -
                     expected) < 1e-6);
}

void TestPerplexity::kld_skips_impossible_tokens() {
    // A token the reference gives probability 0 adds nothing, whatever Q says.
    const std::vector<double> p{-std::numeric_limits<double>::infinity(), std::log(0.25), std::log(0.75)};
    const std::vector<double> q = logs({0.5, 0.25, 0.25});
    const double expected = 0.25 * std::log(0.25 / 0.25) + 0.75 * std::log(0.75 / 0.25);
    QVERIFY(std::abs(kl_divergence(p, q) - expected) < 1e-12);
}

void TestPerplexity::perplexity_of_known_targets() {
    // Targets with probabilities 0.4 and 0.1: perplexity = 1 / sqrt(0.4 * 0.1) = 5.
    NextTokenStats stats;
    const std::vector<double> a = log_softmax(logits_of({0.4, 0.6}));
    const std::vector<double> b = log_softmax(logits_of({0.1, 0.2, 0.7}));
    stats.add(a, a, 0);
    stats.add(b, b, 0);
    QCOMPARE(stats.positions(), std::size_t{2});
    QVERIFY(std::abs(stats.perplexity() - 5.0) < 1e-5);
    QCOMPARE(stats.mean_kld(), 0.0);
    QCOMPARE(stats.top1_agreement(), 1.0);
}

void TestPerplexity::uniform_distribution_has_vocabulary_perplexity() {
    NextTokenStats stats;
    const std::vector<double> uniform = log_softmax(std::vector<float>(512, 3.25f));
    for (TokenId target : {0, 17, 511})
        stats.add(uniform, uniform, target);
    QVERIFY(std::abs(stats.perplexity() - 512.0) < 1e-9);
}

void TestPerplexity::top1_agreement_counts_positions() {
    NextTokenStats stats;
    const std::vector<double> ref = logs({0.6, 0.3, 0.1});
    stats.add(ref, logs({0.5, 0.4, 0.1}), 1); // same argmax
    stats.add(ref, logs({0.2, 0.7, 0.1}), 1); // different
    stats.add(ref, logs({0.45, 0.45, 0.1}), 1); // a tie goes to the first index: same
    stats.add(ref, logs({0.1, 0.1, 0.8}), 1);  // different
    QCOMPARE(stats.top1_agreement(), 0.5);
    // Mean of the four divergences, each computed here from the formula.
    auto kl = [](std::initializer_list<double> q) {
        const double p[] = {0.6, 0.3, 0.1};
        double sum = 0;
        std::size_t i = 0;
        for (double qi : q)
            sum += p[i] * std::log(p[i] / qi), ++i;
        return sum;
    };
    const double mean = (kl({0.5, 0.4, 0.1}) + kl({0.2, 0.7, 0.1}) + kl({0.45, 0.45, 0.1}) + kl({0.1, 0.1, 0.8})) / 4;
    QVERIFY(std::abs(stats.mean_kld() - mean) < 1e-12);
    // Perplexity of the candidates' target probabilities 0.4, 0.7, 0.45, 0.1.
    QVERIFY(std::abs(stats.perplexity() - std::pow(0.4 * 0.7 * 0.45 * 0.1, -0.25)) < 1e-12);
}

void TestPerplexity::stats_reject_bad_input() {
    NextTokenStats stats;
    const std::vector<double> two = logs({0.5, 0.5});
    const std::vector<double> three = logs({0.2, 0.3, 0.5});
    QVERIFY_THROWS_EXCEPTION(Error, stats.add(two, three, 0));
    QVERIFY_THROWS_EXCEPTION(Error, stats.add(two, two, 2));
    QVERIFY_THROWS_EXCEPTION(Error, stats.add(two, two, -1));
    QCOMPARE(stats.positions(), std::size_t{0});
}

void TestPerplexity::windows_predict_every_token_once() {
    std::vector<TokenId> tokens(10);
    std::iota(tokens.begin(), tokens.end(), 100);
    const auto windows = evaluation_windows(tokens, 4);
    // [100..103], [103..106], [106..109]: each starts with the last token of the one before.
    QCOMPARE(windows.size(), std::size_t{3});
    std::vector<TokenId> predicted;
    for (const auto& w : windows) {
        QVERIFY(w.size() >= 2 && w.size() <= 4);
        predicted.insert(predicted.end(), w.begin() + 1, w.end());
    }
    QCOMPARE(predicted, std::vector<TokenId>(tokens.begin() + 1, tokens.end()));
    QCOMPARE(windows[1].front(), windows[0].back());
    // A ragged end: the last window is shorter.
    const auto ragged = evaluation_windows(std::span(tokens).first(6), 4);
    QCOMPARE(ragged.size(), std::size_t{2});
    QCOMPARE(ragged[1].size(), std::size_t{3});
    // A context as long as the text: one window.
    QCOMPARE(evaluation_windows(tokens, 10).size(), std::size_t{1});
    QCOMPARE(evaluation_windows(tokens, 1000).size(), std::size_t{1});
    // The smallest window scores one token each.
    QCOMPARE(evaluation_windows(tokens, 2).size(), std::size_t{9});
}

void TestPerplexity::windows_reject_short_input() {
    const std::vector<TokenId> one{1};
    const std::vector<TokenId> three{1, 2, 3};
    QVERIFY_THROWS_EXCEPTION(Error, evaluation_windows({}, 16));
    QVERIFY_THROWS_EXCEPTION(Error, evaluation_windows(one, 16));
    QVERIFY_THROWS_EXCEPTION(Error, evaluation_windows(three, 1));
}

QTEST_GUILESS_MAIN(TestPerplexity)
#include "test_perplexity.moc"
