// Last-minute windows over polled series (net/attach/metric_window.h):
// counter rates with restarts, histogram quantiles as Prometheus'
// histogram_quantile computes them, and bounded memory. Times are fed, never
// waited for.
#include <QtTest>

#include <cmath>

#include "net/attach/metric_window.h"

using namespace kvscope::attach;

namespace {

const double kInf = std::numeric_limits<double>::infinity();

// Buckets le 0.1, 0.5, 1, +Inf with these cumulative counts.
Buckets buckets(double a, double b, double c, double inf) { return {{0.1, a}, {0.5, b}, {1.0, c}, {kInf, inf}}; }

bool near(std::optional<double> v, double want) { return v && std::abs(*v - want) < 1e-9; }

} // namespace

class TestMetricWindow : public QObject {
    Q_OBJECT

private slots:
    void counter_rate_over_the_kept_samples() {
        CounterWindow w;
        QCOMPARE(w.add(0, 100), WindowAdd::Added);
        QVERIFY(!w.rate()); // one sample: no rate yet
        w.add(30, 160);
        QVERIFY(near(w.rate(), 2.0));
        QVERIFY(near(w.delta(), 60.0));
        QVERIFY(near(w.latest(), 160.0));
    }

    void counter_forgets_what_is_older_than_a_minute() {
        CounterWindow w;
        w.add(0, 0);
        w.add(10, 1000); // a burst long ago
        for (int t = 11; t <= 200; ++t)
            w.add(t, 1000 + 5.0 * (t - 10));
        QVERIFY(near(w.rate(), 5.0)); // the burst is out of the window
        QVERIFY(w.size() <= 61);
    }

    void counter_reset_restarts_the_window() {
        CounterWindow w;
        w.add(0, 50);
        w.add(10, 80);
        QCOMPARE(w.add(20, 4), WindowAdd::Reset);
        QVERIFY(!w.rate()); // nothing spans the restart
        w.add(30, 24);
        QVERIFY(near(w.rate(), 2.0));
    }

    void memory_stays_bounded_under_fast_polls() {
        CounterWindow c;
        HistogramWindow h;
        for (int i = 0; i < 20000; ++i) {
            c.add(i * 0.01, i);
            h.add(i * 0.01, buckets(0, 0, i, i));
        }
        QVERIFY(c.size() <= kMaxSamples);
        QVERIFY(h.size() <= kMaxSamples);
        // Fast polls still span (about) the last minute.
        QVERIFY(near(c.rate(), 100.0));
    }

    void histogram_quantiles_interpolate_inside_the_bucket() {
        HistogramWindow w;
        w.add(0, buckets(0, 0, 0, 0));
        QVERIFY(!w.quantile(0.5)); // no observation yet
        w.add(10, buckets(10, 30, 40, 40));
        // p50: rank 20 of 40 lies in (0.1, 0.5], 10 below, 20 inside.
        QVERIFY(near(w.quantile(0.5), 0.1 + 0.4 * (20.0 - 10) / 20));
        // p99: rank 39.6 lies in (0.5, 1], 30 below, 10 inside.
        QVERIFY(near(w.quantile(0.99), 0.5 + 0.5 * (39.6 - 30) / 10));
        const LatencyQuantiles ms = w.quantiles_ms();
        QVERIFY(near(ms.p50_ms, 300.0));
        QVERIFY(near(ms.p99_ms, 980.0));
    }

    void histogram_counts_only_the_window() {
        HistogramWindow w;
        w.add(0, buckets(100, 100, 100, 100)); // fast requests, long ago
        w.add(70, buckets(100, 100, 110, 110));
        w.add(71, buckets(100, 100, 120, 120)); // the t=0 sample is out
        // Only (0.5, 1] observations between t=70 and t=71: 10 of them.
        QVERIFY(near(w.quantile(0.5), 0.5 + 0.5 * 5.0 / 10));
    }

    void histogram_inf_bucket_gives_the_highest_finite_bound() {
        HistogramWindow w;
        w.add(0, buckets(0, 0, 0, 0));
        w.add(5, buckets(0, 0, 0, 7));
        QVERIFY(near(w.quantile(0.5), 1.0));
        QVERIFY(near(bucket_quantile(0.5, {{1.0, 10}, {kInf, 10}}), 0.5)); // first bucket starts at 0
        QVERIFY(!bucket_quantile(0.5, {{1.0, 10}}));                      // no +Inf bucket
    }

    void histogram_reset_and_layout_change_restart_it() {
        HistogramWindow w;
        w.add(0, buckets(0, 0, 0, 0));
        w.add(5, buckets(0, 5, 5, 5));
        QCOMPARE(w.add(6, buckets(0, 1, 1, 1)), WindowAdd::Reset);
        QVERIFY(!w.quantile(0.5));
        QCOMPARE(w.add(7, Buckets{{0.2, 1}, {kInf, 1}}), WindowAdd::Reset);
        QCOMPARE(w.add(8, Buckets{{0.2, 3}, {kInf, 3}}), WindowAdd::Added);
        QVERIFY(near(w.quantile(0.5), 0.1));
    }
};

QTEST_GUILESS_MAIN(TestMetricWindow)
#include "test_metric_window.moc"
