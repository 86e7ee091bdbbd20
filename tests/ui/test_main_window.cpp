// The main window offscreen without a model: the Chat tab (start page),
// Compare A/B and the allocator playground, the status bar says where the pool lives,
// one snapshot reaches every panel, and grab() saves a real PNG.
#include <QLabel>
#include <QMenuBar>
#include <QSet>
#include <QSignalSpy>
#include <QStatusBar>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QStandardPaths>
#include <QtTest>

#include "engine/kv/kv_cache_manager.h"
#include "ui/blockmap/block_map_widget.h"
#include "ui/compare/compare_panel.h"
#include "ui/dashboards/snapshot_history.h"
#include "ui/blockmap/live_pool_panel.h"
#include "ui/shell/main_window.h"
#include "ui/playground/playground_panel.h"

using namespace kvscope;
using namespace kvscope::ui;

namespace {

constexpr std::uint64_t kGiB = 1ull << 30;

// One running sequence of 6 tokens in a pool of 8 blocks of 4, on an H200.
std::shared_ptr<EngineSnapshot> gpuSnapshot() {
    KvCacheManager kv(KvCacheConfig{KvLayout({2, 2, 8}, KvDtype::F16, 4), 8, AllocationMode::Paged, true, 0, 0.0});
    kv.allocate(1, std::vector<TokenId>{5, 6, 7, 8, 9, 10}, 8);
    auto s = std::make_shared<EngineSnapshot>();
    s->step = 3;
    s->time_s = 0.5;
    s->device = {Backend::Cuda, MemoryPlace::Cuda, "NVIDIA H200", 140 * kGiB, 100 * kGiB};
    s->pool = kv.snapshot();
    s->seqs = {{1, 1, 0, SeqStatus::Running, 6, 0}};
    s->running = 1;
    return s;
}

QLabel* statusLabel(const MainWindow& window, const char* name) {
    return window.statusBar()->findChild<QLabel*>(QString::fromLatin1(name));
}

} // namespace

class TestMainWindow : public QObject {
    Q_OBJECT

private slots:
    // Windows save their layout and settings on close: into Qt's test
    // folder, never the user's.
    void initTestCase() { QStandardPaths::setTestModeEnabled(true); }
    void chatCompareAndPlaygroundAreThePanels() {
        MainWindow window;
        auto* tabs = qobject_cast<QTabWidget*>(window.centralWidget());
        QVERIFY(tabs);
        QCOMPARE(tabs->tabText(0), QStringLiteral("Chat"));
        QCOMPARE(tabs->tabText(1), QStringLiteral("Compare A/B"));
        QVERIFY(tabs->widget(2)->isAncestorOf(window.playground()));
        QCOMPARE(tabs->tabText(2), QStringLiteral("Allocator playground"));
        window.showPlayground();
        QCOMPARE(tabs->currentIndex(), 2);
    }

    void statusBarSaysWhereThePoolLives() {
        MainWindow window;
        auto* location = window.statusBar()->findChild<QLabel*>(QStringLiteral("poolLocation"));
        QVERIFY(location);
        QVERIFY2(location->text().startsWith(QStringLiteral("KV pool: host RAM")), qPrintable(location->text()));
    }

    // The window's one entry for snapshots hands each to the live map, the
    // dashboards' history, Compare A/B's side A and the status bar, which
    // words the snapshot's typed device itself.
    void oneSnapshotReachesEveryPanel() {
        MainWindow window;
        QSignalSpy shown(&window, &MainWindow::snapshotShown);
        const auto gpu = gpuSnapshot();
        window.showSnapshot(gpu);
        QCOMPARE(shown.count(), 1);
        QCOMPARE(window.pool()->map()->snapshot(), gpu->pool);
        QCOMPARE(window.compare()->mapA()->map()->snapshot(), gpu->pool);
        QCOMPARE(window.history().entries().size(), std::size_t{1});
        const QString figures = window.pool()->figures();
        QVERIFY2(figures.contains(QStringLiteral("1 running")) && figures.endsWith(QStringLiteral("in VRAM of NVIDIA H200")),
                 qPrintable(figures));
        QCOMPARE(window.compare()->mapA()->figures(), figures);
        QLabel* usage = statusLabel(window, "poolUsage");
        QVERIFY2(usage->text().contains(QStringLiteral("VRAM 100.00 GiB free of 140.00 GiB")), qPrintable(usage->text()));
        QCOMPARE(usage->toolTip(), QStringLiteral("KV blocks in use, in VRAM of NVIDIA H200"));

        auto host = std::make_shared<EngineSnapshot>(*gpu);
        host->step = 4;
        host->device = {Backend::Cpu, MemoryPlace::Host, "CPU", std::nullopt, std::nullopt};
        window.showSnapshot(host);
        QVERIFY2(!usage->text().contains(QStringLiteral("VRAM")), qPrintable(usage->text()));
        QCOMPARE(usage->toolTip(), QStringLiteral("KV blocks in use, in host RAM"));
        QCOMPARE(window.history().entries().size(), std::size_t{2});

        window.showSnapshot(std::make_shared<EngineSnapshot>()); // no pool: nothing to paint
        QCOMPARE(shown.count(), 2);
        QCOMPARE(window.pool()->map()->snapshot(), host->pool);
    }

    void menusOfferQuitAndAbout() {
        MainWindow window;
        QStringList actions;
        for (QAction* menu : window.menuBar()->actions())
            for (QAction* action : menu->menu()->actions())
                actions << action->text();
        QVERIFY2(actions.contains(QStringLiteral("&Quit")), qPrintable(actions.join(u',')));
        QVERIFY2(actions.contains(QStringLiteral("&About kvscope")), qPrintable(actions.join(u',')));
    }

    // Ctrl+O opens a model from the moment the window shows, before any
    // widget has focus. The window must make itself active: a bare X server
    // never does until a click (run under xvfb-run with -platform xcb, this
    // fails without MainWindow's activation; offscreen activates every window
    // it shows).
    void ctrlOOpensAModelBeforeAnythingHasFocus() {
        MainWindow window;
        window.show();
        QVERIFY(!QApplication::focusWidget());
        QVERIFY(QTest::qWaitForWindowActive(&window));
        QString dialogTitle;
        QTimer closer; // closes the file dialog once it shows
        connect(&closer, &QTimer::timeout, this, [&dialogTitle] {
            if (QWidget* dialog = QApplication::activeModalWidget()) {
                dialogTitle = dialog->windowTitle();
                dialog->close();
            }
        });
        closer.start(10);
        // The key as the window system hands it to the shortcut map, which
        // keyClick would follow by activating the window.
        QTest::sendKeyEvent(QTest::Shortcut, window.windowHandle(), Qt::Key_O, QString(), Qt::ControlModifier);
        closer.stop();
        QCOMPARE(dialogTitle, QStringLiteral("Open Model"));
    }

    void grabSavesAPng() {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        MainWindow window;
        window.playground()->runScenario(Scenario::Abc);
        window.showPlayground();
        window.resize(1280, 800);
        const QString file = dir.filePath(QStringLiteral("window.png"));
        QVERIFY(window.grab().save(file));

        QImage image(file);
        QVERIFY(!image.isNull());
        QCOMPARE(image.size(), QSize(1280, 800));
        // A blank or single-colour picture would mean nothing was painted.
        QSet<QRgb> colors;
        for (int y = 0; y < image.height(); y += 4)
            for (int x = 0; x < image.width(); x += 4)
                colors.insert(image.pixel(x, y));
        QVERIFY2(colors.size() > 20, qPrintable(QString::number(colors.size())));
    }
};

QTEST_MAIN(TestMainWindow)
#include "test_main_window.moc"
