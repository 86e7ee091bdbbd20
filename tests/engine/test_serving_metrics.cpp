// ServingMetrics' rates come from steps and the time they took: a step
// longer than the window still counts, idle time between steps never does.
// And the one percentile definition (engine/core/percentiles.h) they report.
#include <QtTest>

#include "engine/core/percentiles.h"
#include "engine/serving_metrics.h"

using namespace kvscope;

class TestServingMetrics : public QObject {
    Q_OBJECT
private slots:
    void no_step_reads_zero();
    void a_step_longer_than_the_window_counts();
    void idle_time_is_in_no_rate();
    void old_steps_leave_the_window();
    void totals_and_busy_time_add_up();
    void percentiles_interpolate_like_numpy();
};

void TestServingMetrics::percentiles_interpolate_like_numpy() {
    QCOMPARE(percentile({}, 50), 0.0);
    QCOMPARE(percentile({5}, 99), 5.0);
    QCOMPARE(percentile({4, 1, 3, 2}, 50), 2.5); // numpy.percentile([1,2,3,4], 50)
    QVERIFY(qFuzzyCompare(percentile({4, 1, 3, 2}, 90), 3.7));
    QVERIFY(qFuzzyCompare(percentile({1, 2, 3, 4}, 99), 3.97));
    QCOMPARE(percentile({1, 2, 3, 4}, 100), 4.0);
    const Percentiles p = percentiles_of_seconds({0.004, 0.001, 0.003, 0.002});
    QCOMPARE(p.p50_ms, 2.5);
    QVERIFY(qFuzzyCompare(p.p90_ms, 3.7));
    QVERIFY(qFuzzyCompare(p.p95_ms, 3.85));
    QVERIFY(qFuzzyCompare(p.p99_ms, 3.97));
    QCOMPARE(percentiles_ms({}), Percentiles{});
}

void TestServingMetrics::no_step_reads_zero() {
    const ServingMetrics m;
    QCOMPARE(m.generation_tokens_per_s(), 0.0);
    QCOMPARE(m.prompt_tokens_per_s(), 0.0);
    QCOMPARE(m.busy_s(), 0.0);
    QCOMPARE(m.last_step_s(), 0.0);
}

void TestServingMetrics::a_step_longer_than_the_window_counts() {
    ServingMetrics m(5.0);
    m.on_step(0.0, 12.0, 600, 0); // a prefill of 600 tokens
    m.on_step(12.0, 22.0, 0, 47); // 47 sequences decode one token each in 10 s
    QCOMPARE(m.generation_tokens_per_s(), 4.7);
    QCOMPARE(m.prompt_tokens_per_s(), 0.0); // the prefill ended more than 5 s before
    QCOMPARE(m.last_step_s(), 10.0);
}

void TestServingMetrics::idle_time_is_in_no_rate() {
    ServingMetrics m(5.0);
    m.on_step(3.00, 3.02, 100, 1);
    m.on_step(3.02, 3.04, 0, 1);
    // Two seconds idle, then one more step: 3 tokens in 0.06 s of steps.
    m.on_step(5.04, 5.06, 0, 1);
    QVERIFY(std::abs(m.generation_tokens_per_s() - 3 / 0.06) < 1e-9);
    QVERIFY(std::abs(m.prompt_tokens_per_s() - 100 / 0.06) < 1e-9);
}

void TestServingMetrics::old_steps_leave_the_window() {
    ServingMetrics m(1.0);
    m.on_step(0.0, 0.5, 0, 1000);
    m.on_step(10.0, 10.5, 0, 10);
    m.on_step(10.5, 11.0, 0, 10);
    QCOMPARE(m.generation_tokens_per_s(), 20.0); // the step ending at 0.5 is out
}

void TestServingMetrics::totals_and_busy_time_add_up() {
    ServingMetrics m;
    m.on_step(1.0, 1.25, 7, 2);
    m.on_step(4.0, 4.5, 0, 3);
    QCOMPARE(m.busy_s(), 0.75);
    QCOMPARE(m.prompt_tokens(), std::uint64_t{7});
    QCOMPARE(m.generated_tokens(), std::uint64_t{5});
}

QTEST_APPLESS_MAIN(TestServingMetrics)
#include "test_serving_metrics.moc"
