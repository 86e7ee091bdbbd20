// The main window connected to a server, fed samples directly (the slot a
// RemoteController's samples reach; no network): a kvscope server's engine
// snapshot reaches the block map and the dashboards' history, the local
// engine's chat, workload and Compare A/B are off meanwhile, other kinds
// hide the block map, and disconnecting brings the local view back.
#include <QDockWidget>
#include <QLabel>
#include <QMenuBar>
#include <QMessageBox>
#include <QSettings>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTabWidget>
#include <QtTest>

#include "tests/ui/remote_samples.h"
#include "ui/blockmap/block_map_widget.h"
#include "ui/chat/chat_tabs.h"
#include "ui/compare/compare_panel.h"
#include "ui/server/connect_dialog.h"
#include "ui/server/recent_servers.h"
#include "ui/dashboards/snapshot_history.h"
#include "ui/dashboards/throughput_panel.h"
#include "ui/settings/workload_dock.h"
#include "ui/blockmap/live_pool_panel.h"
#include "ui/shell/main_window.h"
#include "ui/server/server_panel.h"
#include "ui/server/slot_map_widget.h"

using namespace kvscope;
using namespace kvscope::ui;

namespace {

QAction* menuAction(const MainWindow& window, const QString& text) {
    for (QAction* menu : window.menuBar()->actions())
        for (QAction* action : menu->menu()->actions())
            if (action->text() == text)
                return action;
    return nullptr;
}

std::shared_ptr<const attach::RemoteSample> shared(attach::RemoteSample s) {
    return std::make_shared<const attach::RemoteSample>(std::move(s));
}

// The kvscope sample with its engine `steps` steps and seconds further on.
std::shared_ptr<const attach::RemoteSample> kvscopeLater(int steps) {
    attach::RemoteSample s = test::kvscopeSample();
    auto engine = std::make_shared<EngineSnapshot>(*s.engine);
    engine->step += static_cast<std::uint64_t>(steps);
    engine->time_s += steps;
    s.engine = engine;
    return shared(std::move(s));
}

} // namespace

class TestRemoteWindow : public QObject {
    Q_OBJECT

private slots:
    void initTestCase() { QStandardPaths::setTestModeEnabled(true); }

    void kvscopeServerFeedsTheBlockMapAndTurnsChatOff() {
        MainWindow window;
        window.resize(1280, 800);
        window.show();
        QSignalSpy shown(&window, &MainWindow::serverSampleShown);
        const auto sample = kvscopeLater(0);
        window.showServerSample(sample);
        QCOMPARE(shown.count(), 1);
        QVERIFY(window.isConnected());
        QCOMPARE(window.pool()->map()->snapshot(), sample->engine->pool);
        QVERIFY(window.pool()->isVisible());
        QVERIFY(window.serverPanel()->isVisible());
        QVERIFY(window.serverPanel()->text(QStringLiteral("title")).contains(QStringLiteral("kvscope server")));
        // The server's own steps and seconds start the history; later ones add to it.
        QCOMPARE(window.history().entries().size(), std::size_t{1});
        QCOMPARE(window.history().entries().back().step, std::uint64_t{1200});
        window.showServerSample(kvscopeLater(5));
        window.showServerSample(kvscopeLater(5)); // the same step again: no new entry
        QCOMPARE(window.history().entries().size(), std::size_t{2});
        QVERIFY(window.findChild<QDockWidget*>(QStringLiteral("fragmentationDock"))->isVisible());

        // Nothing of the local engine is offered.
        QVERIFY(!window.chats()->isVisible());
        QVERIFY(!menuAction(window, QStringLiteral("&New Chat"))->isEnabled());
        QVERIFY(!menuAction(window, QStringLiteral("Start &Workload"))->isEnabled());
        QVERIFY(!window.findChild<QDockWidget*>(QStringLiteral("engineSettingsDock"))->isVisible());
        QVERIFY(!window.findChild<QDockWidget*>(QStringLiteral("workloadDock"))->isVisible());
        auto* tabs = qobject_cast<QTabWidget*>(window.centralWidget());
        QVERIFY(!tabs->isTabEnabled(1));
        QVERIFY(tabs->tabToolTip(1).contains(QStringLiteral("watches a server")));
        QVERIFY(!window.workload()->widget()->isEnabled()); // even when its dock is shown by hand
        QVERIFY(menuAction(window, QStringLiteral("&Disconnect"))->isEnabled());

        // A server that restarted starts its steps again: so does the history.
        attach::RemoteSample restarted = test::kvscopeSample();
        auto fresh = std::make_shared<EngineSnapshot>(*restarted.engine);
        fresh->step = 3;
        fresh->time_s = 1.0;
        restarted.engine = fresh;
        window.showServerSample(shared(restarted));
        QCOMPARE(window.history().entries().size(), std::size_t{1});

        window.disconnectFromServer();
        QVERIFY(!window.isConnected());
        QVERIFY(!window.serverPanel()->isVisible());
        QVERIFY(menuAction(window, QStringLiteral("&New Chat"))->isEnabled());
        QVERIFY(tabs->isTabEnabled(1));
        QVERIFY(window.workload()->widget()->isEnabled());
        QVERIFY(!menuAction(window, QStringLiteral("&Disconnect"))->isEnabled());
        QVERIFY(window.history().entries().empty());
    }

    // The local engine's steps leave the replay slider when the server comes
    // (steps 10..12 would otherwise sit before the server's 1200 until they
    // aged out), and the server's leave it when the window disconnects.
    // Compare A/B's side A never shows the server: it keeps the local steps.
    void connectingAndDisconnectingStartTheReplayAgain() {
        MainWindow window;
        window.resize(1280, 800);
        window.show();
        const auto local = [](std::uint64_t step) {
            auto s = std::make_shared<EngineSnapshot>(*test::kvscopeSample().engine);
            s->step = step;
            return std::shared_ptr<const EngineSnapshot>(std::move(s));
        };
        for (LivePoolPanel* map : {window.pool(), window.compare()->mapA()}) {
            map->addSteps({local(10), local(11)});
            map->setSnapshot(local(12), SequencePalette());
        }
        LivePoolPanel* pool = window.pool();
        pool->pick(0); // replaying a local step
        QCOMPARE(pool->replay().size(), std::size_t{3});
        const auto sample = kvscopeLater(0);
        window.showServerSample(sample);
        QCOMPARE(pool->replay().size(), std::size_t{1});
        QVERIFY(pool->replay().live());
        QCOMPARE(pool->replay().at(0)->step, std::uint64_t{1200});
        QCOMPARE(pool->map()->snapshot(), sample->engine->pool);
        QVERIFY(pool->figures().contains(QStringLiteral("blocks used")));

        window.disconnectFromServer();
        QCOMPARE(pool->replay().size(), std::size_t{0});
        QVERIFY(!pool->replay().shown());
        QVERIFY(!pool->map()->snapshot()); // the server's pool is not painted as the local one
        QVERIFY(!pool->figures().contains(QStringLiteral("blocks used")));
        QCOMPARE(window.compare()->mapA()->replay().size(), std::size_t{3});
    }

    // Item 5 of issue 32: after Disconnect nothing of the dead server stays
    // in the Throughput dock (its plots and "completed 40"), and the map
    // says what it waits for: the server's first snapshot while connecting,
    // no model after.
    void disconnectLeavesNoFigureOfTheServer() {
        MainWindow window;
        window.resize(1280, 800);
        window.show();
        QVERIFY(window.connectToServer({.url = QStringLiteral("http://127.0.0.1:1")}));
        QVERIFY(window.pool()->isVisible()); // its kind is not known yet: it may be a kvscope server
        QVERIFY2(window.pool()->figures().contains(QStringLiteral("Waiting for http://127.0.0.1:1's first snapshot")),
                 qPrintable(window.pool()->figures()));
        for (int step = 0; step < 3; ++step) { // enough points for the plots to draw
            attach::RemoteSample s = test::kvscopeSample();
            auto engine = std::make_shared<EngineSnapshot>(*s.engine);
            engine->step += static_cast<std::uint64_t>(step);
            engine->time_s += step;
            engine->completed_requests = 40;
            s.engine = engine;
            window.showServerSample(shared(std::move(s)));
        }
        QVERIFY(window.raiseDock(QStringLiteral("throughput")));
        QTRY_VERIFY(window.throughput()->figuresText().contains(QStringLiteral("completed 40")));
        QVERIFY(!window.throughput()->series(ThroughputPanel::Series::Running).empty());
        QVERIFY(!window.throughput()->figuresGreyed());
        // The server stops answering: the dock's figures are its last ones, greyed, with their age.
        attach::RemoteSample away = *kvscopeLater(2);
        away.link = attach::LinkState::Reconnecting;
        away.failed_polls = 1;
        away.retry_in_s = 0.5;
        away.data_age_s = 12.0;
        window.showServerSample(shared(away));
        QVERIFY(window.throughput()->figuresGreyed());
        const QList<QLabel*> notes = window.throughput()->findChildren<QLabel*>();
        QVERIFY(std::ranges::any_of(notes, [](const QLabel* l) {
            return l->isVisible() && l->text().startsWith(QStringLiteral("Last figures, as of 12 s ago"));
        }));

        QVERIFY(window.serverPanel()->isCountingAge());
        window.disconnectFromServer();
        QVERIFY(!window.serverPanel()->isCountingAge()); // its ticks would grey the local figures again
        QVERIFY(!window.throughput()->figuresGreyed());
        QCOMPARE(window.throughput()->figuresText(), QStringLiteral("No snapshot yet"));
        QVERIFY(window.throughput()->series(ThroughputPanel::Series::Running).empty());
        QVERIFY(window.throughput()->series(ThroughputPanel::Series::GenerationTokensPerS).empty());
        QVERIFY(window.pool()->figures().contains(QStringLiteral("No model loaded")));
        // The dock's TTFT says what it measures, and that the server's differs.
        const QList<QLabel*> labels = window.throughput()->findChildren<QLabel*>();
        const auto figures = std::ranges::find(labels, window.throughput()->figuresText(), &QLabel::text);
        QVERIFY(figures != labels.end());
        QVERIFY2((*figures)->toolTip().contains(QStringLiteral("from a request's arrival in its queue")),
                 qPrintable((*figures)->toolTip()));
    }

    // llama.cpp has no block map: the map and dashboards go, the slot map shows.
    void llamaCppShowsSlotsNotABlockMap() {
        MainWindow window;
        window.resize(1280, 800);
        window.show();
        window.showServerSample(shared(test::llamaCppSample()));
        QVERIFY(!window.pool()->isVisible());
        QVERIFY(window.serverPanel()->slotMap()->isVisible());
        QVERIFY(!window.findChild<QDockWidget*>(QStringLiteral("fragmentationDock"))->isVisible());
        QVERIFY(window.serverPanel()->text(QStringLiteral("cannotTell")).contains(QStringLiteral("No block map")));
        QVERIFY(window.windowTitle().contains(QStringLiteral("http://127.0.0.1:8080")));
        QVERIFY(window.history().entries().empty());
    }

    // A server joins the recent list when it first answers; one that never
    // does (a dead http://127.0.0.1:1) is not offered again.
    void onlyAServerThatAnsweredIsRemembered() {
        QSettings().remove(QStringLiteral("recentServers"));
        MainWindow window;
        QVERIFY(window.connectToServer({.url = QStringLiteral("http://127.0.0.1:1")}));
        attach::RemoteSample down = test::llamaCppSample();
        down.url = "http://127.0.0.1:1";
        down.link = attach::LinkState::Reconnecting;
        window.showServerSample(shared(down));
        window.disconnectFromServer();
        QVERIFY(RecentServers::list().empty());

        QVERIFY(window.connectToServer({.url = QStringLiteral("http://127.0.0.1:8080")}));
        QVERIFY(RecentServers::list().empty()); // not yet: nothing has answered
        window.showServerSample(shared(test::llamaCppSample()));
        const auto servers = RecentServers::list();
        QCOMPARE(servers.size(), std::size_t{1});
        QCOMPARE(servers.front().url, QStringLiteral("http://127.0.0.1:8080"));
        window.disconnectFromServer();
    }

    void aBadUrlIsRefusedWithAMessage() {
        MainWindow window;
        QVERIFY(!window.connectToServer({.url = QStringLiteral("ftp://x")}));
        QVERIFY(!window.isConnected());
        auto* box = window.findChild<QMessageBox*>(QStringLiteral("connectError"));
        QVERIFY(box);
        QVERIFY2(box->text().contains(QStringLiteral("ftp://x")), qPrintable(box->text()));
    }
};

QTEST_MAIN(TestRemoteWindow)
#include "test_remote_window.moc"
