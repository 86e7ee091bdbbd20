// The live pool panel in the app's window with stories260K: the legend
// fits the window from a small laptop screen to a large monitor, and after
// a fast turn the chat's blocks are cached, painted in its muted colour and
// named after it, with the replay holding the steps no published snapshot
// showed. Needs the shared models folder (label model); the panel without
// a model is test_live_pool_panel.
#include <QImage>
#include <QSpinBox>
#include <QStandardPaths>
#include <QtTest>

#include "support/test_models.h"
#include "ui/blockmap/block_look.h"
#include "ui/blockmap/block_map_legend.h"
#include "ui/blockmap/block_map_widget.h"
#include "ui/blockmap/live_pool_panel.h"
#include "ui/blockmap/snapshot_replay.h"
#include "ui/chat/chat_panel.h"
#include "ui/chat/chat_tabs.h"
#include "ui/shell/main_window.h"

using namespace kvscope;
using namespace kvscope::ui;

namespace {

constexpr int kWaitMs = 60'000; // a deadlock guard, not a timing

QImage render(QWidget& widget) {
    QImage image(widget.size(), QImage::Format_RGB32);
    widget.render(&image);
    return image;
}

QRgb cellColor(BlockMapWidget& map, BlockId block) {
    const QRect cell = map.blockRect(block);
    return render(map).pixel(cell.topLeft() + QPoint(1, 1)); // beside the white dot
}

// The cached-free blocks of the snapshot the map shows that the palette
// attributes to a chat, as (block, tooltip).
std::vector<std::pair<BlockId, QString>> chatCachedBlocks(const BlockMapWidget& map) {
    std::vector<std::pair<BlockId, QString>> found;
    const auto& pool = map.snapshot();
    for (BlockId b = 0; pool && b < pool->blocks.size(); ++b)
        if (pool->blocks[b].state == BlockState::CachedFree &&
            map.toolTipFor(b).contains(QStringLiteral("cached, from Chat")))
            found.emplace_back(b, map.toolTipFor(b));
    return found;
}

} // namespace

class TestLivePoolPanelModel : public QObject {
    Q_OBJECT

private slots:
    // Windows save their layout and settings on close: into Qt's test
    // folder, never the user's.
    void initTestCase() { QStandardPaths::setTestModeEnabled(true); }

    // In the app's window, from a small laptop screen to a large monitor.
    void legendFitsTheWindow_data() {
        QTest::addColumn<QSize>("size");
        QTest::newRow("1024x700") << QSize(1024, 700);
        QTest::newRow("1600x1000") << QSize(1600, 1000);
        QTest::newRow("2560x1440") << QSize(2560, 1440);
    }

    void legendFitsTheWindow() {
        QFETCH(QSize, size);
        KVSCOPE_REQUIRE_MODEL(model, "stories260K-f32.gguf");
        MainWindow window;
        window.resize(size);
        window.show();
        QSignalSpy ready(&window, &MainWindow::modelReady);
        window.openModel(ModelSource::file(model));
        QVERIFY(ready.wait(kWaitMs));
        QVERIFY(QTest::qWaitForWindowExposed(&window));
        QCoreApplication::processEvents();
        BlockMapLegend* legend = window.pool()->legend();
        const QRect visible = legend->visibleRegion().boundingRect();
        for (int i = 0; i < legend->entryCount(); ++i)
            QVERIFY2(visible.contains(legend->entryRect(i)),
                     qPrintable(QStringLiteral("%1 at (%2, %3) outside the visible %4x%5 of the legend")
                                    .arg(legend->entryText(i))
                                    .arg(legend->entryRect(i).x())
                                    .arg(legend->entryRect(i).y())
                                    .arg(visible.width())
                                    .arg(visible.height())));
        if (const QByteArray dir = qgetenv("KVSCOPE_TEST_SHOTS"); !dir.isEmpty()) // for looking at it
            window.grab().save(QStringLiteral("%1/pool_%2x%3.png").arg(QString::fromLocal8Bit(dir)).arg(size.width()).arg(size.height()));
    }

    // stories260K writes its reply faster than the publish rate: after the
    // turn the chat's blocks are cached, painted and named after it, and the
    // replay holds the steps no published snapshot showed.
    void aFastTurnLeavesItsChatInTheCache() {
        KVSCOPE_REQUIRE_MODEL(model, "stories260K-f32.gguf");
        MainWindow window;
        window.resize(1280, 800);
        window.show();
        QSignalSpy ready(&window, &MainWindow::modelReady);
        window.openModel(ModelSource::file(model));
        QVERIFY(ready.wait(kWaitMs));
        ChatPanel* chat = window.chats()->current();
        QVERIFY(chat);
        chat->findChild<QDoubleSpinBox*>(QStringLiteral("temperature"))->setValue(0); // greedy: a long story
        int shown = 0;
        connect(&window, &MainWindow::snapshotShown, this, [&] { ++shown; });
        QSignalSpy finished(&window, &MainWindow::turnFinished);
        chat->submit(QStringLiteral("Once upon a time"));
        QVERIFY(finished.wait(kWaitMs));

        BlockMapWidget* map = window.pool()->map();
        QTRY_VERIFY_WITH_TIMEOUT(!chatCachedBlocks(*map).empty(), kWaitMs);
        const auto [block, tip] = chatCachedBlocks(*map).front();
        QVERIFY2(tip.contains(QStringLiteral("cached, from Chat 1")), qPrintable(tip));
        QCOMPARE(cellColor(*map, block), block_colors::cached_from(ChatTabs::colorOf(chat->chat()).rgb()));

        // Every step of the turn is kept, published or not: scrub back to
        // one where the chat's sequence runs and its blocks are its colour.
        const SnapshotReplay& replay = window.pool()->replay();
        QVERIFY2(replay.size() > static_cast<std::size_t>(shown),
                 qPrintable(QStringLiteral("%1 kept, %2 shown").arg(replay.size()).arg(shown)));
        std::optional<std::size_t> running;
        for (std::size_t i = 0; i < replay.size() && !running; ++i)
            if (replay.at(i)->running == 1 && !replay.at(i)->pool->sequences.empty())
                running = i;
        QVERIFY(running);
        window.pool()->pick(static_cast<int>(*running));
        const auto& pool = map->snapshot();
        QVERIFY(pool == replay.at(*running)->pool);
        const BlockId held = pool->sequences.front().blocks.front();
        QVERIFY2(map->toolTipFor(held).contains(QStringLiteral("Chat 1")), qPrintable(map->toolTipFor(held)));
        window.pool()->goLive();
        QVERIFY(!chatCachedBlocks(*map).empty());
    }
};

QTEST_MAIN(TestLivePoolPanelModel)
#include "test_live_pool_panel_model.moc"
