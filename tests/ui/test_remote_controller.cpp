// RemoteController against a server that is not there (a closed loopback
// port; no network beyond it): its monitor's samples reach the UI thread as
// values, on the UI thread, saying the link is not live and why; stopping
// drops later samples.
#include <QSignalSpy>
#include <QThread>
#include <QtTest>

#include "ui/bridge/remote_controller.h"

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
        bool elsewhere = false; // a sample delivered on another thread than the UI's
        connect(&controller, &RemoteController::sampleReady, this,
                [&elsewhere] { elsewhere |= QThread::currentThread() != QCoreApplication::instance()->thread(); },
                Qt::DirectConnection);
        controller.start(nobodyThere());
        QVERIFY(controller.isActive());
        // Until a sample says the server is away (a refused poll is a fault).
        QTRY_VERIFY_WITH_TIMEOUT(!samples.isEmpty() &&
                                     !samples.last().at(0).value<Sample>()->faults.empty(),
                                 20000);
        const Sample last = samples.last().at(0).value<Sample>();
        QVERIFY(last->link != attach::LinkState::Live);
        QCOMPARE(last->url, std::string("http://127.0.0.1:1"));
        QVERIFY(!elsewhere);

        controller.stop();
        QVERIFY(!controller.isActive());
        const auto seen = samples.count();
        QTest::qWait(400); // several poll intervals: none of them may arrive
        QCOMPARE(samples.count(), seen);
    }
};

QTEST_MAIN(TestRemoteController)
#include "test_remote_controller.moc"
