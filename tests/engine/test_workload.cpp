// Workload generation: deterministic, within its caps, with the documented
// length distributions and arrival process.
#include <QtTest>

#include <numeric>

#include "engine/core/error.h"
#include "engine/workload/workload.h"

using namespace kvscope;

class TestWorkload : public QObject {
    Q_OBJECT
private slots:
    void same_seed_same_workload();
    void requests_ask_for_the_cap_unless_oracle();
    void sharegpt_is_long_tailed_and_capped();
    void fixed_and_uniform_lengths();
    void shared_prefix_and_poisson_arrivals();
    void impossible_specs_are_errors();
};

void TestWorkload::same_seed_same_workload() {
    WorkloadSpec s;
    const auto a = make_workload(s), b = make_workload(s);
    QCOMPARE(a.size(), std::size_t{48});
    for (std::size_t i = 0; i < a.size(); ++i) {
        QCOMPARE(a[i].prompt, b[i].prompt);
        QCOMPARE(a[i].max_new_tokens, b[i].max_new_tokens);
    }
    s.seed = 2;
    QVERIFY(make_workload(s)[0].prompt != a[0].prompt);
}

void TestWorkload::sharegpt_is_long_tailed_and_capped() {
    WorkloadSpec s;
    s.requests = 4000;
    s.max_total = 1 << 20; // uncapped: check the distribution itself
    std::vector<double> prompts, outputs;
    for (const auto& r : make_workload(s)) {
        prompts.push_back(double(r.prompt.size() - 1));
        outputs.push_back(r.output_len);
    }
    auto mean = [](const std::vector<double>& v) { return std::accumulate(v.begin(), v.end(), 0.0) / double(v.size()); };
    auto median = [](std::vector<double> v) {
        std::nth_element(v.begin(), v.begin() + long(v.size() / 2), v.end());
        return v[v.size() / 2];
    };
    // Log-normal, sigma 1: median 100 / 200, mean e^0.5 times the median.
    QVERIFY(std::abs(median(prompts) - 100) < 10);
    QVERIFY(std::abs(median(outputs) - 200) < 20);
    QVERIFY(std::abs(mean(prompts) / median(prompts) - 1.65) < 0.2);
    s.max_total = 512;
    s.requests = 500;
    for (const auto& r : make_workload(s)) {
        QVERIFY(r.prompt.size() + r.output_len <= 512);
        QVERIFY(r.output_len >= s.min_len && r.prompt.size() >= s.min_len);
    }
}

void TestWorkload::requests_ask_for_the_cap_unless_oracle() {
    // A client cannot know the reply's length: it asks for up to the cap
    // and the reply ends at its drawn length. The oracle asks for exactly
    // that length.
    WorkloadSpec s;
    s.requests = 200;
    bool shorter = false;
    for (const auto& r : make_workload(s)) {
        QCOMPARE(r.prompt.size() + r.max_new_tokens, std::size_t{s.max_total});
        QVERIFY(r.output_len <= r.max_new_tokens);
        shorter = shorter || r.output_len < r.max_new_tokens;
    }
    QVERIFY(shorter);
    s.oracle_lengths = true;
    for (const auto& r : make_workload(s))
        QCOMPARE(r.max_new_tokens, r.output_len);
}

void TestWorkload::fixed_and_uniform_lengths() {
    WorkloadSpec s;
    s.distribution = LengthDistribution::Fixed;
    s.prompt_len = 30;
    s.output_len = 40;
    for (const auto& r : make_workload(s)) {
        QCOMPARE(r.prompt.size(), std::size_t{31}); // BOS + 30
        QCOMPARE(r.output_len, 40u);
    }
    s.distribution = LengthDistribution::Uniform;
    s.requests = 300;
    std::uint32_t lo = 1000, hi = 0;
    for (const auto& r : make_workload(s)) {
        lo = std::min(lo, r.output_len);
        hi = std::max(hi, r.output_len);
    }
    QVERIFY(lo >= 4 && lo < 10 && hi <= 40 && hi > 34);
}

void TestWorkload::shared_prefix_and_poisson_arrivals() {
    WorkloadSpec s;
    s.shared_prefix = 20;
    s.arrival_rate = 10;
    s.requests = 2000;
    const auto w = make_workload(s);
    for (const auto& r : w)
        QVERIFY(std::equal(w[0].prompt.begin(), w[0].prompt.begin() + 21, r.prompt.begin()));
    // Poisson at 10/s: the last of 2000 arrives after about 200 s.
    QVERIFY(std::abs(w.back().arrival_s - 200) < 20);
    for (std::size_t i = 1; i < w.size(); ++i)
        QVERIFY(w[i].arrival_s >= w[i - 1].arrival_s);
}

void TestWorkload::impossible_specs_are_errors() {
    WorkloadSpec s;
    s.shared_prefix = 600;
    QVERIFY_THROWS_EXCEPTION(Error, make_workload(s));
    QVERIFY_THROWS_EXCEPTION(Error, parse_length_distribution("zipf"));
}

QTEST_APPLESS_MAIN(TestWorkload)
#include "test_workload.moc"
