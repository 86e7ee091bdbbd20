// The UI latency probe: its Qt-free window of samples fed known values
// (worst and p95 of the last minute, old samples leaving, the whole run in
// buckets), and the probe itself seeing a stall the UI thread is made to do.
#include <QElapsedTimer>
#include <QSignalSpy>
#include <QtTest>

#include "ui/shell/latency_probe.h"
#include "ui/shell/latency_window.h"

using namespace kvscope::ui;

class TestUiLatency : public QObject {
    Q_OBJECT
private slots:
    void emptyWindowSaysNothing() {
        const LatencyWindow window;
        QCOMPARE(window.recent().samples, 0u);
        QCOMPARE(window.whole_run().samples, 0u);
        QCOMPARE(window.recent().worst_ms, 0.0);
    }

    // 100 samples, 1..100 ms, one every 0.1 s: all within the minute.
    void worstAndP95OfTheLastMinute() {
        LatencyWindow window;
        for (int i = 1; i <= 100; ++i)
            window.record(i * 0.1, i);
        const LatencySummary s = window.recent();
        QCOMPARE(s.samples, 100u);
        QCOMPARE(s.worst_ms, 100.0);
        QVERIFY(qFuzzyCompare(s.p95_ms, 95.05)); // interpolated, as engine/core/percentiles.h defines
        QCOMPARE(s.median_ms, 50.5);
    }

    void oldSamplesLeaveTheWindow() {
        LatencyWindow window(60);
        window.record(0, 300);    // a stall long ago
        window.record(30, 10);
        window.record(61, 20);    // the stall is now more than 60 s old
        const LatencySummary s = window.recent();
        QCOMPARE(s.samples, 2u);
        QCOMPARE(s.worst_ms, 20.0);
        // The whole run still remembers it.
        QCOMPARE(window.whole_run().worst_ms, 300.0);
        QCOMPARE(window.whole_run().samples, 3u);
    }

    void shorterSpanLooksAtTheTail() {
        LatencyWindow window(60);
        window.record(0, 80);
        window.record(55, 5);
        window.record(60, 7);
        QCOMPARE(window.recent(10).worst_ms, 7.0);
        QCOMPARE(window.recent(10).samples, 2u);
        QCOMPARE(window.recent().worst_ms, 80.0);
    }

    void earlyTicksCountAsOnTime() {
        LatencyWindow window;
        window.record(1, -0.4);
        QCOMPARE(window.recent().worst_ms, 0.0);
    }

    // 1000 samples: 900 at 2.5 ms, 90 at 30.2 ms, 10 at 4000 ms (beyond the
    // last bucket). Median and p95 are their bucket's upper edge.
    void wholeRunInBuckets() {
        LatencyWindow window;
        double t = 0;
        for (int i = 0; i < 900; ++i)
            window.record(t += 0.025, 2.5);
        for (int i = 0; i < 90; ++i)
            window.record(t += 0.025, 30.2);
        for (int i = 0; i < 10; ++i)
            window.record(t += 0.025, 4000);
        const LatencySummary run = window.whole_run();
        QCOMPARE(run.samples, 1000u);
        QCOMPARE(run.median_ms, 3.0);
        QCOMPARE(run.p95_ms, 31.0);
        QCOMPARE(run.worst_ms, 4000.0);
    }

    // The UI thread busy for 200 ms: the tick due in that time comes at
    // least 200 ms - one interval late, however loaded the machine is. The
    // stall starts once the probe has ticked (its clock runs), and the
    // busy loop is the stall itself, not a wait.
    void probeSeesAStall() {
        UiLatencyProbe probe;
        QSignalSpy updated(&probe, &UiLatencyProbe::updated);
        QTRY_VERIFY_WITH_TIMEOUT(probe.samples().recent().samples >= 1, 60'000); // a deadlock guard
        constexpr int kStallMs = 200;
        QElapsedTimer busy;
        busy.start();
        while (busy.elapsed() < kStallMs) {
        }
        QVERIFY(updated.wait(60'000)); // about a second; the timeout is a deadlock guard
        const LatencySummary s = probe.samples().recent();
        QVERIFY(s.samples >= 2);
        QVERIFY2(s.worst_ms >= kStallMs - UiLatencyProbe::kIntervalMs, qPrintable(QString::number(s.worst_ms)));
        QVERIFY(probe.describe().contains(QStringLiteral("worst")));
    }
};

QTEST_MAIN(TestUiLatency)
#include "test_ui_latency.moc"
