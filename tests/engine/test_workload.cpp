// Workload generation: deterministic, within its caps, with the documented
// length distributions and arrival process. And WorkloadFeeder pacing a
// workload into an engine over a tiny synthetic model: arrivals wait for
// their time, every end is counted, refusals fail, stop aborts.
#include <QtTest>

#include <QTemporaryDir>

#include <memory>
#include <numeric>

#include "engine/core/error.h"
#include "engine/model/synthetic_model.h"
#include "engine/presets/model_presets.h"
#include "engine/workload/workload.h"
#include "engine/workload/workload_feeder.h"

using namespace kvscope;

namespace {

// Two layers of 64 dims over a 256-token vocabulary: fast enough to run
// whole workloads in a unit test.
const ModelGeometry kTiny{"tiny", "llama", 64, 2, 4, 2, 128, 256, 256, true, false};

WorkloadRequest request_at(double arrival_s, std::uint32_t prompt_len = 8, std::uint32_t output_len = 4) {
    WorkloadRequest r;
    r.arrival_s = arrival_s;
    r.prompt.assign(prompt_len, 5);
    r.prompt[0] = 1;
    r.max_new_tokens = output_len;
    r.output_len = output_len;
    return r;
}

} // namespace

class TestWorkload : public QObject {
    Q_OBJECT
private slots:
    void initTestCase();
    void feeder_runs_a_workload_to_its_end();
    void feeder_waits_for_arrival_times();
    void feeder_counts_refusals_as_failed();
    void feeder_stop_aborts_what_it_submitted();
    void same_seed_same_workload();
    void requests_ask_for_the_cap_unless_oracle();
    void sharegpt_is_long_tailed_and_capped();
    void fixed_and_uniform_lengths();
    void shared_prefix_and_poisson_arrivals();
    void impossible_specs_are_errors();

private:
    std::unique_ptr<Engine> engine(); // fresh, over the tiny model

    QTemporaryDir dir_;
    std::shared_ptr<const Model> model_;
};

void TestWorkload::initTestCase() {
    QVERIFY(dir_.isValid());
    const std::string path = dir_.filePath("tiny.gguf").toStdString();
    write_synthetic_model(kTiny, GgmlType::F32, 1, path);
    model_ = std::make_shared<const Model>(path);
}

std::unique_ptr<Engine> TestWorkload::engine() {
    EngineConfig c;
    c.num_blocks = 64;
    return std::make_unique<Engine>(c, model_);
}

void TestWorkload::feeder_runs_a_workload_to_its_end() {
    auto e = engine();
    const WorkloadSpec spec{.requests = 6,
                            .distribution = LengthDistribution::Fixed,
                            .prompt_len = 12,
                            .output_len = 5,
                            .max_total = 64,
                            .n = 2,
                            .vocab = kTiny.vocab};
    WorkloadFeeder feeder(*e, make_workload(spec), spec.n);
    std::size_t others = 0;
    e->set_output_callback([&](const RequestOutput& o) { others += !feeder.on_output(o); });
    const RequestId chat = e->add_request(std::vector<TokenId>{1, 7, 8}, RequestParams{}).id(); // not the feeder's
    while (!feeder.done()) {
        QVERIFY(feeder.admit_arrivals().empty());
        e->step();
    }
    QCOMPARE(feeder.submitted(), std::size_t{6});
    QCOMPARE(feeder.completed(), std::size_t{6});
    QCOMPARE(feeder.ended(), std::size_t{6});
    QCOMPARE(feeder.failed(), std::size_t{0});
    QVERIFY(!feeder.seconds_to_next_arrival());
    QVERIFY(chat > 0 && others > 0); // the chat's outputs were left to their owner
}

void TestWorkload::feeder_waits_for_arrival_times() {
    auto e = engine();
    WorkloadFeeder feeder(*e, {request_at(0), request_at(3600)});
    e->set_output_callback([&](const RequestOutput& o) { feeder.on_output(o); });
    QVERIFY(feeder.admit_arrivals().empty());
    QCOMPARE(feeder.submitted(), std::size_t{1});
    QVERIFY(!feeder.all_submitted());
    QVERIFY(*feeder.seconds_to_next_arrival() > 3000); // an hour away
    while (e->has_work())
        e->step();
    QCOMPARE(feeder.ended(), std::size_t{1});
    QVERIFY(!feeder.done()); // the second request is still to come
}

void TestWorkload::feeder_counts_refusals_as_failed() {
    auto e = engine();
    // Longer than the tiny model's 256-token context: add_request refuses it.
    WorkloadFeeder feeder(*e, {request_at(0, 300), request_at(0)});
    e->set_output_callback([&](const RequestOutput& o) { feeder.on_output(o); });
    const std::vector<WorkloadRejection> refused = feeder.admit_arrivals();
    QCOMPARE(refused.size(), std::size_t{1});
    QCOMPARE(refused[0].index, std::size_t{0});
    QVERIFY(!refused[0].error.empty());
    QCOMPARE(feeder.failed(), std::size_t{1});
    while (e->has_work())
        e->step();
    QVERIFY(feeder.done());
    QCOMPARE(feeder.completed(), std::size_t{1});
    QCOMPARE(feeder.ended(), std::size_t{2});
}

void TestWorkload::feeder_stop_aborts_what_it_submitted() {
    auto e = engine();
    WorkloadFeeder feeder(*e, {request_at(0, 8, 50), request_at(0, 8, 50), request_at(0, 8, 50), request_at(3600)});
    e->set_output_callback([&](const RequestOutput& o) { feeder.on_output(o); });
    QVERIFY(feeder.admit_arrivals().empty());
    e->step();
    QVERIFY(e->has_work());
    QCOMPARE(feeder.stop(), std::size_t{3});
    QVERIFY(!e->has_work()); // aborted in the engine
    QCOMPARE(feeder.ended(), std::size_t{3});
    QCOMPARE(feeder.completed(), std::size_t{0});
    QVERIFY(feeder.done()); // stopped: the last request will never be added
    QVERIFY(feeder.admit_arrivals().empty());
    QCOMPARE(feeder.submitted(), std::size_t{3});
}

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
