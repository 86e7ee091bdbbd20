// RemoteController against a server that is not there (a closed loopback
// port; no network beyond it): its monitor's samples reach the UI thread as
// values, on the UI thread, saying the link is not live and why. And against
// the in-test vLLM server (tests/net/attach/fake_vllm_server.h): stopping
// drops later samples, while a second controller on the same server shows
// that polls went on and their samples were delivered; the server dying
// while watched reaches the server panel as attempts and greyed figures.
#include <QSignalSpy>
#include <QThread>
#include <QtTest>

#include "net/attach/fake_vllm_server.h"
#include "ui/bridge/remote_controller.h"
#include "ui/server/server_panel.h"

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

// The in-test vLLM server, polled every 100 ms.
attach::ConnectOptions fakeVllm(const kvscope::test::FakeVllmServer& server) {
    attach::ConnectOptions options;
    options.url = server.url();
    options.interval = std::chrono::milliseconds(100);
    return options;
}

bool isLive(const QSignalSpy& samples) {
    return !samples.isEmpty() && samples.last().at(0).value<Sample>()->link == attach::LinkState::Live;
}

constexpr int kWaitMs = 60'000; // a deadlock guard, not a timing

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
                                 kWaitMs);
        const Sample last = samples.last().at(0).value<Sample>();
        QVERIFY(last->link != attach::LinkState::Live);
        QCOMPARE(last->url, std::string("http://127.0.0.1:1"));
        QVERIFY(!elsewhere);

        controller.stop();
        QVERIFY(!controller.isActive());
    }

    // The server dies while watched: the samples the panel gets count the
    // attempts, say the retry interval and grey the last figures (issue 32:
    // it said "Reconnecting (0 reconnects so far)" for 16 s).
    void aDeadServerIsRetriedAndSaysSo() {
        auto server = std::make_unique<kvscope::test::FakeVllmServer>();
        RemoteController controller;
        ServerPanel panel;
        QSignalSpy samples(&controller, &RemoteController::sampleReady);
        connect(&controller, &RemoteController::sampleReady, &panel, [&panel](const Sample& s) { panel.showSample(*s); });
        controller.start(fakeVllm(*server));
        QTRY_VERIFY_WITH_TIMEOUT(isLive(samples), kWaitMs);
        QVERIFY(!panel.figuresGreyed());

        server.reset(); // gone
        const auto attempts = [&samples] {
            return samples.isEmpty() ? 0 : samples.last().at(0).value<Sample>()->failed_polls;
        };
        QTRY_VERIFY_WITH_TIMEOUT(attempts() >= 2, kWaitMs);
        const QString freshness = panel.text(QStringLiteral("freshness"));
        QVERIFY2(freshness.contains(QStringLiteral("Reconnecting: %1 attempts so far, retrying every").arg(attempts())),
                 qPrintable(freshness));
        QVERIFY(panel.figuresGreyed());
        QVERIFY(panel.text(QStringLiteral("stale")).startsWith(QStringLiteral("Last figures, as of")));
        controller.stop();
    }

    // Two controllers poll one server every 100 ms; one stops. The other
    // keeps polling and delivering through the same event loop: once the
    // server has answered several more polls and the witness has delivered
    // several more samples, the stopped one would have had samples to
    // deliver too, and none may arrive.
    void stopDropsLaterSamples() {
        kvscope::test::FakeVllmServer server;
        RemoteController stopped, witness;
        QSignalSpy dropped(&stopped, &RemoteController::sampleReady);
        QSignalSpy delivered(&witness, &RemoteController::sampleReady);
        stopped.start(fakeVllm(server));
        witness.start(fakeVllm(server));
        QTRY_VERIFY_WITH_TIMEOUT(isLive(dropped) && isLive(delivered), kWaitMs);

        stopped.stop();
        QVERIFY(!stopped.isActive());
        const auto seen = dropped.count();
        const int polled = server.served("/metrics");
        const auto witnessed = delivered.count();
        QTRY_VERIFY_WITH_TIMEOUT(server.served("/metrics") >= polled + 4 && delivered.count() >= witnessed + 3,
                                 kWaitMs);
        QCOMPARE(dropped.count(), seen);
    }
};

QTEST_MAIN(TestRemoteController)
#include "test_remote_controller.moc"
