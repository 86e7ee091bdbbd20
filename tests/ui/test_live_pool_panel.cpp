// The live pool panel without a model: blocks a chat left in the prefix
// cache keep a muted version of its colour (on a hand-made pool), the replay
// model keeps and scrubs snapshots within its limits, the legend shows every
// entry at any width, the map follows a dark palette around its cells, and
// the zoom bar zooms a 200,000-block map.
// The panel in the app's window with stories260K is
// test_live_pool_panel_model (label model).
#include <QApplication>
#include <QImage>
#include <QSlider>
#include <QSpinBox>
#include <QTabWidget>
#include <QLabel>
#include <QToolButton>
#include <QStandardPaths>
#include <QtTest>

#include "ui/blockmap/block_look.h"
#include "ui/blockmap/block_map_layout.h"
#include "ui/blockmap/block_map_legend.h"
#include "ui/blockmap/block_map_widget.h"
#include "ui/blockmap/block_map_zoom_bar.h"
#include "ui/blockmap/live_pool_panel.h"
#include "ui/blockmap/snapshot_replay.h"
#include "ui/blockmap/snapshot_replay_bar.h"

using namespace kvscope;
using namespace kvscope::ui;

namespace {

constexpr SeqId kChatSeq = 7;     // a chat's ended sequence
constexpr SeqId kWorkloadSeq = 8; // a workload request's ended sequence

// Block 0 cached from the chat, 1 cached from the workload, 2 cached with
// no known holder, 3 free.
std::shared_ptr<const PoolSnapshot> cachedPool() {
    PoolSnapshot p{.mode = AllocationMode::Paged,
                   .layout = KvLayout(KvGeometry{1, 1, 8}, KvDtype::F16, 4),
                   .blocks = {},
                   .owners = {},
                   .sequences = {},
                   .fragmentation = {}};
    BlockInfo cached;
    cached.state = BlockState::CachedFree;
    cached.fill = 4;
    for (const std::optional<SeqId> holder : {std::optional<SeqId>(kChatSeq), std::optional<SeqId>(kWorkloadSeq),
                                              std::optional<SeqId>()}) {
        cached.last_holder = holder;
        p.blocks.push_back(cached);
    }
    p.blocks.push_back(BlockInfo{});
    return std::make_shared<const PoolSnapshot>(std::move(p));
}

// Attributes kChatSeq's cached blocks to "Chat 1", nothing else.
SequencePalette chatOnly() {
    return SequencePalette([](SeqId seq) { return QStringLiteral("seq %1").arg(seq); }, {},
                           [](SeqId seq) { return seq == kChatSeq ? QStringLiteral("Chat 1") : QString(); });
}

std::shared_ptr<const EngineSnapshot> atStep(std::uint64_t step, std::size_t blocks = 4) {
    auto s = std::make_shared<EngineSnapshot>();
    s->step = step;
    s->time_s = 0.001 * static_cast<double>(step);
    PoolSnapshot pool{.mode = AllocationMode::Paged,
                      .layout = KvLayout(KvGeometry{1, 1, 8}, KvDtype::F16, 4),
                      .blocks = std::vector<BlockInfo>(blocks),
                      .owners = {},
                      .sequences = {},
                      .fragmentation = {}};
    s->pool = std::make_shared<const PoolSnapshot>(std::move(pool));
    return s;
}

QImage render(QWidget& widget) {
    QImage image(widget.size(), QImage::Format_RGB32);
    widget.render(&image);
    return image;
}

QRgb cellColor(BlockMapWidget& map, BlockId block) {
    const QRect cell = map.blockRect(block);
    return render(map).pixel(cell.topLeft() + QPoint(1, 1)); // beside the white dot
}

QPalette darkPalette() {
    QPalette dark;
    dark.setColor(QPalette::Window, QColor(0x2b, 0x2b, 0x2b));
    dark.setColor(QPalette::Base, QColor(0x1e, 0x1e, 0x1e));
    dark.setColor(QPalette::WindowText, Qt::white);
    dark.setColor(QPalette::Text, Qt::white);
    return dark;
}

} // namespace

class TestLivePoolPanel : public QObject {
    Q_OBJECT

private slots:
    // Windows save their layout and settings on close: into Qt's test
    // folder, never the user's.
    void initTestCase() { QStandardPaths::setTestModeEnabled(true); }
    void cachedBlocksOfAChatKeepAMutedColour() {
        BlockMapWidget map;
        map.setSequencePalette(chatOnly());
        map.setSnapshot(cachedPool());
        map.resize(300, 80);
        const QRgb chat = chatOnly().color(kChatSeq);
        QCOMPARE(cellColor(map, 0), block_colors::cached_from(chat));
        QVERIFY(block_colors::cached_from(chat) != block_colors::kCachedFree);
        QCOMPARE(cellColor(map, 1), block_colors::kCachedFree); // a workload's: plain cached grey
        QCOMPARE(cellColor(map, 2), block_colors::kCachedFree);
        QVERIFY2(map.toolTipFor(0).contains(QStringLiteral("cached, from Chat 1")), qPrintable(map.toolTipFor(0)));
        QVERIFY(!map.toolTipFor(1).contains(QStringLiteral("from")));
        QVERIFY(map.toolTipFor(1).contains(QStringLiteral("Cached free")));
    }

    void mapFollowsADarkPalette() {
        BlockMapWidget map;
        map.setPalette(darkPalette());
        map.setSnapshot(cachedPool());
        map.resize(400, 200);
        const QImage image = render(map);
        QCOMPARE(image.pixel(0, 0), darkPalette().color(QPalette::Base).rgb()); // behind the cells
        QCOMPARE(image.pixel(image.width() - 1, image.height() - 1), darkPalette().color(QPalette::Window).rgb());
        QCOMPARE(cellColor(map, 3), block_colors::kFree); // data colours stay
    }

    void legendShowsEveryEntryAtAnyWidth_data() {
        QTest::addColumn<int>("width");
        for (int w : {260, 420, 640, 1024, 2560})
            QTest::newRow(qPrintable(QString::number(w))) << w;
    }

    void legendShowsEveryEntryAtAnyWidth() {
        QFETCH(int, width);
        LivePoolPanel panel;
        panel.resize(width, 500);
        panel.show();
        QVERIFY(QTest::qWaitForWindowExposed(&panel));
        BlockMapLegend* legend = panel.legend();
        QStringList texts;
        for (int i = 0; i < legend->entryCount(); ++i) {
            texts << legend->entryText(i);
            QVERIFY2(legend->rect().contains(legend->entryRect(i)),
                     qPrintable(QStringLiteral("%1 at %2 in a legend of %3x%4")
                                    .arg(legend->entryText(i))
                                    .arg(legend->entryRect(i).x())
                                    .arg(legend->width())
                                    .arg(legend->height())));
        }
        for (const char* name : {"Reserved (not yet written)", "Cached free", "Cached, from a chat"})
            QVERIFY2(texts.contains(QString::fromLatin1(name)), name);
    }

    void replayScrubsTheKeptSnapshots() {
        SnapshotReplay replay(ReplayLimits{5, std::size_t{1} << 30});
        QVERIFY(!replay.shown());
        for (std::uint64_t step = 1; step <= 4; ++step)
            replay.add(atStep(step));
        QVERIFY(replay.live());
        QCOMPARE(replay.shown()->step, std::uint64_t{4});
        replay.pick(1);
        QVERIFY(!replay.live());
        QCOMPARE(replay.shown()->step, std::uint64_t{2});
        replay.add(SnapshotBatch{atStep(5), atStep(6)}); // step 1 drops out; the picked one stays shown
        QCOMPARE(replay.size(), std::size_t{5});
        QCOMPARE(replay.shown()->step, std::uint64_t{2});
        QCOMPARE(replay.position(), std::size_t{0});
        replay.add(atStep(7)); // the picked snapshot drops out: the oldest kept one is shown
        QCOMPARE(replay.shown()->step, std::uint64_t{3});
        replay.add(atStep(7)); // the same step again replaces the newest
        QCOMPARE(replay.size(), std::size_t{5});
        replay.pick(4); // the newest: live
        QVERIFY(replay.live());
        replay.pick(0);
        replay.add(atStep(1)); // an earlier step: another engine, history starts again
        QVERIFY(replay.live());
        QCOMPARE(replay.size(), std::size_t{1});
    }

    void replayKeepsWithinItsByteCap() {
        const std::size_t one = snapshot_bytes(*atStep(1, 1000));
        SnapshotRing ring(ReplayLimits{512, 3 * one});
        for (std::uint64_t step = 1; step <= 10; ++step)
            ring.push(atStep(step, 1000));
        QCOMPARE(ring.size(), std::size_t{3});
        QCOMPARE(ring.newest()->step, std::uint64_t{10});
        QCOMPARE(ring.dropped(), std::uint64_t{7});
        const SnapshotBatch batch = ring.take();
        QCOMPARE(batch.size(), std::size_t{3});
        QCOMPARE(batch.front()->step, std::uint64_t{8});
        QVERIFY(ring.empty());
    }

    void sliderPicksAndLiveReturns() {
        LivePoolPanel panel;
        panel.addSteps({atStep(1), atStep(2), atStep(3)});
        panel.setSnapshot(atStep(4), SequencePalette());
        QVERIFY(panel.map()->snapshot() == panel.replay().at(3)->pool);
        QSlider* slider = panel.replayBar()->slider();
        QCOMPARE(slider->maximum(), 3);
        QCOMPARE(slider->value(), 3);
        slider->setValue(1);
        QVERIFY(panel.map()->snapshot() == panel.replay().at(1)->pool);
        QVERIFY(panel.replayBar()->status().contains(QStringLiteral("step 2")));
        panel.setSnapshot(atStep(5), SequencePalette()); // replaying: the map stays on step 2
        QVERIFY(panel.map()->snapshot() == panel.replay().at(1)->pool);
        panel.goLive();
        QVERIFY(panel.map()->snapshot() == panel.replay().at(4)->pool);
        QVERIFY(panel.replayBar()->status().startsWith(QStringLiteral("live")));
    }

    // The zoom bar drives the map and says its scale; its buttons are
    // enabled only where they would do something.
    void zoomBarZoomsTheMapAndSaysTheScale() {
        LivePoolPanel panel;
        panel.resize(700, 500);
        panel.show();
        QVERIFY(QTest::qWaitForWindowExposed(&panel));
        panel.setSnapshot(atStep(1, 200000), {});
        BlockMapZoomBar* bar = panel.zoomBar();
        QVERIFY(bar->zoomInButton()->isEnabled());
        QVERIFY(!bar->zoomOutButton()->isEnabled());
        QVERIFY(!bar->fitButton()->isEnabled());
        QVERIFY2(bar->scaleText().contains(QStringLiteral("blocks \u00b7 all 200,000 blocks")), qPrintable(bar->scaleText()));
        const std::size_t perCell = panel.map()->cells().scale.perCell;
        QVERIFY(perCell > 1);
        bar->zoomInButton()->click();
        QCOMPARE(panel.map()->zoomStep(), std::size_t{1});
        QVERIFY(panel.map()->cells().scale.perCell < perCell);
        QVERIFY(bar->zoomOutButton()->isEnabled());
        QVERIFY(bar->fitButton()->isEnabled());
        QVERIFY2(bar->scaleText().contains(QStringLiteral("of 200,000 blocks in view")), qPrintable(bar->scaleText()));
        // The legend says what a cell of a run shows, while cells hold runs.
        const auto lastEntry = [&] { return panel.legend()->entryText(panel.legend()->entryCount() - 1); };
        QCOMPARE(lastEntry(), QStringLiteral("A cell of %1 blocks: their mix").arg(panel.map()->cells().scale.perCell));
        while (panel.map()->cells().scale.perCell > 1)
            bar->zoomInButton()->click();
        QVERIFY(!lastEntry().startsWith(QStringLiteral("A cell of")));
        bar->fitButton()->click();
        QCOMPARE(panel.map()->zoomStep(), std::size_t{0});
        QVERIFY(!bar->fitButton()->isEnabled());
        QCOMPARE(lastEntry(), QStringLiteral("A cell of %1 blocks: their mix").arg(perCell));
    }

    // Behind another tab the map keeps up but the figures line waits for
    // the tab to show (no wrapped relayout 30 times a second for nobody).
    void aHiddenPanelWordsItsFiguresWhenShown() {
        QTabWidget tabs;
        tabs.addTab(new QWidget, QStringLiteral("front"));
        auto* panel = new LivePoolPanel;
        tabs.addTab(panel, QStringLiteral("behind"));
        tabs.resize(600, 400);
        tabs.show();
        QVERIFY(QTest::qWaitForWindowExposed(&tabs));
        const auto line = [&] { return panel->findChild<QLabel*>(QStringLiteral("poolFigures"))->text(); };
        const QString idle = line();
        const auto snapshot = atStep(1, 64);
        panel->setSnapshot(snapshot, {});
        QCOMPARE(panel->map()->snapshot(), snapshot->pool);
        QCOMPARE(line(), idle);
        QVERIFY2(panel->figures().contains(QStringLiteral("blocks used")), qPrintable(panel->figures()));
        tabs.setCurrentIndex(1);
        QCOMPARE(line(), panel->figures());
        QVERIFY(line() != idle);
    }
};

QTEST_MAIN(TestLivePoolPanel)
#include "test_live_pool_panel.moc"
