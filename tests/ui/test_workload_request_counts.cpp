// Issue 32's honest counts: after Stop Workload the Throughput dock says how
// many requests completed, were aborted and failed, and those are the
// engine's own totals, not "completed" for every request that ended. A
// workload of mixed lengths runs on stories260K through the app's
// controller, is stopped once some requests have completed and others are
// still in the engine, and the dock's figures (its text and the snapshot
// history it plots from) are compared with the engine's snapshot after the
// stop and with the workload's own count of the requests that ended.
#include <atomic>
#include <memory>

#include <QObject>
#include <QSignalSpy>
#include <QtTest>

#include "controller_test_support.h"
#include "support/test_models.h"
#include "ui/bridge/engine_controller.h"
#include "ui/dashboards/throughput_panel.h"

using namespace kvscope;
using namespace kvscope::ui;
using namespace kvscope::ui::test;

namespace {

using SnapshotPtr = std::shared_ptr<const EngineSnapshot>;

// 200 requests all at once, replies of 4 to 300 tokens: more than the 64
// seats, so short replies complete while long ones and a queue remain.
WorkloadSpec mixedWorkload() {
    WorkloadSpec spec;
    spec.requests = 200;
    spec.distribution = LengthDistribution::Uniform;
    spec.prompt_len = 100;
    spec.output_len = 300;
    return spec;
}

std::size_t inFlight(const EngineSnapshot& s) { return s.running + s.waiting + s.swapped; }

} // namespace

class TestWorkloadRequestCounts : public QObject {
    Q_OBJECT

private slots:
    void theDockShowsTheEnginesCountsAfterAStop() {
        KVSCOPE_REQUIRE_MODEL(model, "stories260K-f32.gguf");
        EngineThread engine;
        EngineController* c = engine.controller();
        QSignalSpy ready(c, &EngineController::modelLoaded);
        engine.loadModel(ModelSource::file(model));
        QVERIFY(arrives(ready, 1));

        ThroughputPanel panel; // as the main window feeds its Throughput dock
        panel.show();
        connect(c, &EngineController::snapshotReady, &panel, &ThroughputPanel::setSnapshot);
        QSignalSpy snapshots(c, &EngineController::snapshotReady);
        QSignalSpy progress(c, &EngineController::workloadProgress);
        QSignalSpy stopped(c, &EngineController::workloadStopped);
        engine.startWorkload(mixedWorkload());

        // Stop once some requests have completed and others are still in the engine.
        const auto last = [&snapshots] { return snapshots.last().at(0).value<SnapshotPtr>(); };
        QTRY_VERIFY_WITH_TIMEOUT(
            !snapshots.isEmpty() && last()->completed_requests > 0 && inFlight(*last()) > 0, kWaitMs);
        std::atomic<qsizetype> afterStop = -1; // the first snapshot after the stop holds the final counts
        QObject context;
        connect(c, &EngineController::workloadStopped, &context, [&] { afterStop = snapshots.size(); },
                Qt::DirectConnection);
        engine.stopWorkload();
        QVERIFY(arrives(stopped, 1));
        QTRY_VERIFY_WITH_TIMEOUT(afterStop >= 0 && snapshots.size() > afterStop, kWaitMs);
        const SnapshotPtr engineTotals = snapshots.at(afterStop).at(0).value<SnapshotPtr>();
        QCOMPARE(inFlight(*engineTotals), std::size_t{0});

        // The engine's counts: each request that ended counted once, by how it ended.
        const quint32 ended = progress.last().at(1).toUInt(); // the workload's own count
        const quint32 aborted = stopped.last().at(0).toUInt();
        QVERIFY(engineTotals->completed_requests > 0);
        QVERIFY(aborted > 0);
        QCOMPARE(engineTotals->aborted_requests, std::uint64_t{aborted});
        QCOMPARE(engineTotals->failed_requests, std::uint64_t{0});
        QCOMPARE(engineTotals->completed_requests + engineTotals->aborted_requests + engineTotals->failed_requests,
                 std::uint64_t{ended});

        // The dock shows those counts once it has the snapshot.
        const auto& history = panel.history()->entries();
        QTRY_VERIFY_WITH_TIMEOUT(!history.empty() && history.back().time_s >= engineTotals->time_s, kWaitMs);
        QCOMPARE(history.back().completed_requests, engineTotals->completed_requests);
        QCOMPARE(history.back().aborted_requests, engineTotals->aborted_requests);
        QCOMPARE(history.back().failed_requests, engineTotals->failed_requests);
        const QString counts = QStringLiteral("completed %1 \u00b7 aborted %2 \u00b7 failed %3")
                                   .arg(engineTotals->completed_requests)
                                   .arg(engineTotals->aborted_requests)
                                   .arg(engineTotals->failed_requests);
        QVERIFY2(panel.figuresText().contains(counts), qPrintable(panel.figuresText() + " lacks " + counts));
    }
};

QTEST_MAIN(TestWorkloadRequestCounts)
#include "test_workload_request_counts.moc"
