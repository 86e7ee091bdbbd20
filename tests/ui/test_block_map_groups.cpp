// The block map of a pool with KV cache groups (a model with sliding-window
// layers): one lane per kind of attention layer then the free pool, the
// lanes' figures, hover text naming the group and window, blocks freed by
// the window marked for a moment (live and in the replay), and a pool of
// one group drawn exactly as the plain grid.
#include <QImage>
#include <QtTest>

#include <QStandardPaths>

#include "ui/blockmap/block_lanes.h"
#include "ui/blockmap/block_look.h"
#include "ui/blockmap/block_map_layout.h"
#include "ui/blockmap/block_map_legend.h"
#include "ui/blockmap/block_map_widget.h"
#include "ui/blockmap/live_pool_panel.h"
#include "ui/blockmap/window_fade.h"

using namespace kvscope;
using namespace kvscope::ui;

namespace {

constexpr std::uint32_t kBlockSize = 4;
constexpr std::uint32_t kWindow = 8;

// Two full-attention layers and four of a window of 8: two layers per
// block, so group 0 is full attention and groups 1 and 2 the window's.
KvLayout hybridLayout(bool keepWhole = false) {
    const std::uint32_t windows[] = {0, kWindow, kWindow, 0, kWindow, kWindow};
    return KvLayout(KvGeometry{6, 1, 8}, KvDtype::F16, kBlockSize, KvGroups::from_windows(windows, keepWhole));
}

BlockInfo held(std::uint16_t group, std::uint16_t fill, std::uint32_t owner_begin) {
    return {.state = BlockState::Used, .fill = fill, .ref_count = 1, .owner_begin = owner_begin, .owner_count = 1,
            .group = group};
}

BlockInfo freed(BlockState state, std::uint16_t group, bool leftWindow) {
    return {.state = state, .fill = static_cast<std::uint16_t>(state == BlockState::Free ? 0 : kBlockSize),
            .group = group, .left_window = leftWindow};
}

// Block 0: full attention, used; 1: window group 1, used; 2: window group
// 2, cached, freed by the window; 3: free, freed by group 1's window; 4:
// free, never taken; 5: window group 2, half full.
PoolSnapshot hybridPool() {
    PoolSnapshot s{.mode = AllocationMode::Paged, .layout = hybridLayout(), .blocks = {}, .owners = {7, 7, 7},
                   .sequences = {}, .fragmentation = {}};
    s.blocks = {held(0, 4, 0), held(1, 4, 1), freed(BlockState::CachedFree, 2, true),
                freed(BlockState::Free, 1, true), freed(BlockState::Free, 0, false), held(2, 2, 2)};
    SequenceInfo seq;
    seq.id = 7;
    s.sequences = {seq};
    return s;
}

std::shared_ptr<const PoolSnapshot> shared(PoolSnapshot s) { return std::make_shared<const PoolSnapshot>(std::move(s)); }

// The same pool before the window let go of blocks 2 and 3.
PoolSnapshot beforeFreeing() {
    PoolSnapshot s = hybridPool();
    s.blocks[2] = held(2, 4, 1);
    s.blocks[3] = held(1, 4, 1);
    return s;
}

std::shared_ptr<const EngineSnapshot> engineSnapshot(std::uint64_t step, double time, PoolSnapshot pool) {
    auto s = std::make_shared<EngineSnapshot>();
    s->step = step;
    s->time_s = time;
    s->pool = std::make_shared<const PoolSnapshot>(std::move(pool));
    return s;
}

QImage render(QWidget& widget) {
    QImage image(widget.size(), QImage::Format_RGB32);
    widget.render(&image);
    return image;
}

} // namespace

class TestBlockMapGroups : public QObject {
    Q_OBJECT
private slots:
    void initTestCase() { QStandardPaths::setTestModeEnabled(true); }

    void lanesHoldEachKindsBlocksThenTheFreePool() {
        const PoolSnapshot pool = hybridPool();
        const std::vector<BlockLane> lanes = blockLanes(pool);
        QCOMPARE(lanes.size(), std::size_t{3});
        QCOMPARE(QString::fromStdString(lanes[0].kind.title()), QStringLiteral("full attention, 2 layers"));
        QCOMPARE(QString::fromStdString(lanes[1].kind.title()), QStringLiteral("sliding window 8, 4 layers"));
        QVERIFY(lanes[2].free_pool);
        QCOMPARE(lanes[0].blocks, (std::vector<BlockId>{0}));
        QCOMPARE(lanes[1].blocks, (std::vector<BlockId>{1, 2, 5}));
        QCOMPARE(lanes[2].blocks, (std::vector<BlockId>{3, 4}));
        // The engine's own definitions over each lane's blocks.
        QCOMPARE(lanes[1].figures.used_blocks, std::size_t{2});
        QCOMPARE(lanes[1].figures.cached_free_blocks, std::size_t{1});
        QCOMPARE(lanes[1].figures.internal_waste_slots, std::size_t{kBlockSize - 2});
        QCOMPARE(lanes[0].figures.internal_waste_slots, std::size_t{0});
        // Both blocks its window let go of count for the window's kind,
        // the cached one in its lane and the free one in the pool.
        QCOMPARE(lanes[1].left_window, std::size_t{2});
        QCOMPARE(lanes[0].left_window, std::size_t{0});
    }

    void aDenseModelHasNoLanes() {
        PoolSnapshot dense{.layout = KvLayout(KvGeometry{6, 1, 8}, KvDtype::F16, kBlockSize), .blocks = {},
                           .owners = {}, .sequences = {}, .fragmentation = {}};
        dense.blocks.assign(6, {});
        QVERIFY(blockLanes(dense).empty());
        BlockMapWidget widget;
        widget.resize(300, 120);
        widget.setSnapshot(shared(dense));
        QVERIFY(widget.lanes().empty());
        // Exactly the plain grid, block 0 in the corner.
        const BlockMapLayout grid = BlockMapLayout::fit(widget.size(), 6);
        for (BlockId b = 0; b < 6; ++b)
            QCOMPARE(widget.blockRect(b), grid.cellRect(b));
        QCOMPARE(widget.blockRect(0).topLeft(), QPoint(BlockMapLayout::kMargin, BlockMapLayout::kMargin));
    }

    void lanesKeepTheirPitchWhateverTheSplit() {
        const std::size_t even[] = {500, 500, 24};
        const std::size_t skewed[] = {1000, 0, 24};
        const BlockMapLayout a = BlockMapLayout::fit(QSize(400, 300), even, 14);
        const BlockMapLayout b = BlockMapLayout::fit(QSize(400, 300), skewed, 14);
        QVERIFY(a.scale == b.scale);
        QVERIFY(a.showsAll()); // every block fits, titles and all
        QVERIFY(b.showsAll());
        // A large pool in lanes: runs of blocks, the same in any split, and
        // still every lane in view at a readable size.
        const std::size_t bigEven[] = {40000, 40000, 120000};
        const std::size_t bigSkewed[] = {190000, 10, 9990};
        const BlockMapLayout c = BlockMapLayout::fit(QSize(400, 300), bigEven, 14);
        const BlockMapLayout d = BlockMapLayout::fit(QSize(400, 300), bigSkewed, 14);
        QVERIFY(c.scale == d.scale);
        QVERIFY(c.scale.perCell > 1);
        QVERIFY(c.cell >= 4);
        QVERIFY(c.showsAll());
        QVERIFY(d.showsAll());
        // One lane without titles is the plain grid.
        const std::size_t one[] = {1024};
        const BlockMapLayout single = BlockMapLayout::fit(QSize(400, 300), one, 0);
        const BlockMapLayout grid = BlockMapLayout::fit(QSize(400, 300), 1024);
        QVERIFY(single.scale == grid.scale);
        QCOMPARE(single.cellRect(1023), grid.cellRect(1023));
    }

    void mapDrawsLanesUnderTitlesAndHitsEveryBlock() {
        BlockMapWidget widget;
        widget.resize(500, 260);
        widget.setSnapshot(shared(hybridPool()));
        QCOMPARE(widget.lanes().size(), std::size_t{3});
        QVERIFY(widget.laneTitle(0).startsWith(QStringLiteral("full attention, 2 layers")));
        QVERIFY(widget.laneTitle(1).contains(QStringLiteral("sliding window 8, 4 layers")));
        QCOMPARE(widget.laneTitle(1),
                 QStringLiteral("sliding window 8, 4 layers (2 groups): 2 used, 1 cached, 2 freed by the window"));
        QVERIFY(widget.laneTitle(2).startsWith(QStringLiteral("Free pool, shared by every group \u00b7 2 blocks empty")));
        // Lane by lane, top to bottom: block 5 (window lane) above block 3 (free pool).
        QVERIFY(widget.blockRect(0).bottom() < widget.laneTitleRect(1).top());
        QVERIFY(widget.blockRect(5).bottom() < widget.blockRect(3).top());
        QCOMPARE(widget.blockRect(1).top(), widget.blockRect(5).top()); // one row of the window lane
        for (BlockId b = 0; b < 6; ++b)
            QCOMPARE(widget.blockAt(widget.blockRect(b).center()), std::optional<BlockId>(b));
        QCOMPARE(widget.blockAt(widget.laneTitleRect(1).center()), std::nullopt);
    }

    void hoverNamesTheGroupAndWindow() {
        BlockMapWidget widget;
        widget.resize(500, 260);
        widget.setSnapshot(shared(hybridPool()));
        QVERIFY(widget.toolTipFor(0).contains(QStringLiteral("Group 1 of 3 \u00b7 full attention")));
        QVERIFY(widget.toolTipFor(5).contains(QStringLiteral("Group 3 of 3 \u00b7 sliding window 8")));
        QVERIFY(!widget.toolTipFor(5).contains(QStringLiteral("freed by the window")));
        QVERIFY(widget.toolTipFor(2).contains(QStringLiteral("Group 3 of 3 \u00b7 sliding window 8 \u00b7 freed by the window")));
        QVERIFY(widget.toolTipFor(3).contains(QStringLiteral("Group 2 of 3 \u00b7 sliding window 8 \u00b7 freed by the window")));
        QVERIFY(widget.toolTipFor(4).contains(QStringLiteral("Free pool: any group may take it")));
        // --swa-full: the window groups keep everything, and say so.
        PoolSnapshot whole = beforeFreeing();
        whole.layout = hybridLayout(true);
        widget.setSnapshot(shared(whole));
        QVERIFY(widget.toolTipFor(5).contains(QStringLiteral("sliding window 8 (kept whole)")));
        QVERIFY(widget.laneTitle(1).contains(QStringLiteral("kept whole")));
    }

    void fadeFollowsTheSnapshotsClock() {
        WindowFade fade;
        fade.observe(beforeFreeing(), 10.0);
        QCOMPARE(fade.strength(2, 10.0), 0.0);
        QVERIFY(!fade.fading(10.0));
        fade.observe(hybridPool(), 11.0); // blocks 2 and 3 freed by the window
        QCOMPARE(fade.strength(2, 11.0), 1.0);
        QCOMPARE(fade.strength(3, 11.0 + WindowFade::kSeconds / 2), 0.5);
        QCOMPARE(fade.strength(4, 11.0), 0.0); // free, never by the window
        QVERIFY(fade.fading(11.0 + WindowFade::kSeconds * 0.9));
        QVERIFY(!fade.fading(11.0 + WindowFade::kSeconds));
        QCOMPARE(fade.strength(2, 11.0 + WindowFade::kSeconds), 0.0);
        fade.observe(hybridPool(), 11.5); // still left behind: freed at 11.0, not again
        QCOMPARE(fade.strength(2, 11.5), 1.0 - 0.5 / WindowFade::kSeconds);
        // Already left behind in the first snapshot seen: freed at an unknown time, no mark.
        WindowFade late;
        late.observe(hybridPool(), 20.0);
        QCOMPARE(late.strength(2, 20.0), 0.0);
        // An earlier time is another engine: it starts over.
        fade.observe(hybridPool(), 1.0);
        QCOMPARE(fade.strength(2, 1.0), 0.0);
    }

    void freedBlocksAreMarkedThenLookAsBefore() {
        BlockMapWidget widget;
        widget.resize(500, 260);
        widget.setSnapshot(shared(hybridPool()));
        WindowFade fade;
        fade.observe(beforeFreeing(), 10.0);
        fade.observe(hybridPool(), 11.0);
        widget.setWindowFade(fade, 11.0, false);
        QCOMPARE(widget.windowMark(3), 1.0);
        const QRect freeCell = widget.blockRect(3);
        const QRgb marked = render(widget).pixel(freeCell.center());
        QVERIFY(marked != block_colors::kFree);
        // Nearer the mark's colour than the free grey it was.
        const auto distance = [](QRgb a, QRgb b) {
            return std::abs(qRed(a) - qRed(b)) + std::abs(qGreen(a) - qGreen(b)) + std::abs(qBlue(a) - qBlue(b));
        };
        QVERIFY(distance(marked, block_colors::kLeftWindow) < distance(marked, block_colors::kFree));
        widget.setWindowFade(fade, 11.0 + WindowFade::kSeconds, false);
        QCOMPARE(render(widget).pixel(freeCell.center()), block_colors::kFree);
        QCOMPARE(render(widget).pixel(widget.blockRect(4).center()), block_colors::kFree);
    }

    void replayShowsTheMarkAsItStoodAtThatStep() {
        LivePoolPanel panel;
        panel.resize(600, 400);
        panel.setSnapshot(engineSnapshot(1, 10.0, beforeFreeing()), {});
        panel.setSnapshot(engineSnapshot(2, 11.0, hybridPool()), {});
        panel.setSnapshot(engineSnapshot(3, 11.6, hybridPool()), {});
        panel.setSnapshot(engineSnapshot(4, 20.0, hybridPool()), {});
        panel.pick(1); // the step that freed them
        QCOMPARE(panel.map()->windowMark(2), 1.0);
        panel.pick(2);
        QCOMPARE(panel.map()->windowMark(2), 1.0 - 0.6 / WindowFade::kSeconds);
        panel.pick(0);
        QCOMPARE(panel.map()->windowMark(2), 0.0);
        panel.goLive(); // 9 s later: faded
        QCOMPARE(panel.map()->windowMark(2), 0.0);
        QVERIFY(panel.map()->toolTipFor(2).contains(QStringLiteral("freed by the window")));
    }

    void figuresGoOnPerKind() {
        LivePoolPanel panel;
        panel.setSnapshot(engineSnapshot(1, 1.0, hybridPool()), {});
        const QString figures = panel.figures();
        QVERIFY2(figures.contains(QStringLiteral("full attention, 2 layers: 1 block used")), qPrintable(figures));
        QVERIFY2(figures.contains(QStringLiteral("sliding window 8, 4 layers: 2 blocks used (internal waste 25.0% "
                                                 "of their slots, reserved 0.0%) \u00b7 1 cached \u00b7 2 freed by "
                                                 "the window")),
                 qPrintable(figures));
        QVERIFY(panel.legend()->entryText(panel.legend()->entryCount() - 1) == QStringLiteral("Freed by the window"));
        // A dense pool: the figures and legend as they always were.
        PoolSnapshot dense{.layout = KvLayout(KvGeometry{6, 1, 8}, KvDtype::F16, kBlockSize), .blocks = {},
                           .owners = {}, .sequences = {}, .fragmentation = {}};
        dense.blocks.assign(6, {});
        LivePoolPanel plain;
        plain.setSnapshot(engineSnapshot(1, 1.0, dense), {});
        QVERIFY(!plain.figures().contains(QLatin1Char('\n')));
        QVERIFY(plain.legend()->entryText(plain.legend()->entryCount() - 1) != QStringLiteral("Freed by the window"));
        // Contiguous: a window group's ring reuses its own blocks, frees none.
        PoolSnapshot ring = hybridPool();
        ring.mode = AllocationMode::Contiguous;
        LivePoolPanel contiguous;
        contiguous.setSnapshot(engineSnapshot(1, 1.0, ring), {});
        QVERIFY(contiguous.legend()->entryText(contiguous.legend()->entryCount() - 1) !=
                QStringLiteral("Freed by the window"));
    }
};

QTEST_MAIN(TestBlockMapGroups)
#include "test_block_map_groups.moc"
