// RemoteController against a server that is not there (a closed loopback
// port; no network beyond it): its monitor's samples reach the UI thread as
// values, saying the link is not live and why, while the UI thread's own
// timers keep firing; stopping drops later samples.
#include <QSignalSpy>
#include <QTimer>
#include <QtTest>

#include "ui/remote_controller.h"

using namespace kvscope;
using namespace kvscope::ui;

namespace {

using Sample = std::shared_ptr<const attach::RemoteSample>;

// Port 1 on loopback: nothing listens there, so every poll is refused at once.
attach::ConnectOptions nobodyThere() {
    attach::ConnectOptions options;
    options.url = "http://127.0.0.1:1";
    options.kind = attach::ServerKind::LlamaCpp;
    options.interval = std::chrono::milliseconds(100);
    return options;
}

} // namespace

class TestRemoteController : public QObject {
    Q_OBJECT

private slots:
    void samplesArriveOnTheUiThreadAndSayTheServerIsAway() {
        RemoteController controller;
        QSignalSpy samples(&controller, &RemoteController::sampleReady);
        int ticks = 0;
        QTimer tick;
        connect(&tick, &QTimer::timeout, this, [&ticks] { ++ticks; });
        tick.start(10);
        controller.start(nobodyThere());
        QVERIFY(controller.isActive());
        // Until a sample says the server is away (a refused poll is a fault).
        QTRY_VERIFY_WITH_TIMEOUT(!samples.isEmpty() &&
                                     !samples.last().at(0).value<Sample>()->faults.empty(),
                                 20000);
        const Sample last = samples.last().at(0).value<Sample>();
        QVERIFY(last->link != attach::LinkState::Live);
        QCOMPARE(last->url, std::string("http://127.0.0.1:1"));
        QVERIFY(ticks > 0); // the UI thread kept running while the monitor polled

        controller.stop();
        QVERIFY(!controller.isActive());
        const auto seen = samples.count();
        QTest::qWait(400); // several poll intervals: none of them may arrive
        QCOMPARE(samples.count(), seen);
    }
};

QTEST_MAIN(TestRemoteController)
#include "test_remote_controller.moc"
