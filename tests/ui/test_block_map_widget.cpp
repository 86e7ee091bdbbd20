// BlockMapWidget offscreen: the pixels of each block state, hit testing,
// tooltips; large pools as runs of blocks per cell, zoom, pan and the minimap.
#include <QHelpEvent>
#include <QImage>
#include <QLocale>
#include <QToolTip>
#include <QWheelEvent>
#include <QtTest>

#include "ui/blockmap/block_look.h"
#include "ui/blockmap/block_map_layout.h"
#include "ui/blockmap/block_map_widget.h"
#include "ui/playground/playground_model.h"

using namespace kvscope;
using namespace kvscope::ui;

namespace {

constexpr std::uint32_t kBlockSize = 4;

BlockInfo block(BlockState state, std::uint16_t fill, std::uint32_t ref_count, std::uint32_t owner_begin,
                std::uint32_t owner_count) {
    return {state, fill, ref_count, owner_begin, owner_count};
}

SequenceInfo sequence(SeqId id) {
    SequenceInfo s;
    s.id = id;
    return s;
}

// Block 0 free, 1 used full (A), 2 used half (A), 3 shared full (A, B),
// 4 reserved (B), 5 cached free.
std::shared_ptr<const PoolSnapshot> sixBlocks() {
    return std::make_shared<const PoolSnapshot>(PoolSnapshot{
        .mode = AllocationMode::Paged,
        .layout = KvLayout(KvGeometry{1, 1, 8}, KvDtype::F16, kBlockSize),
        .blocks = {block(BlockState::Free, 0, 0, 0, 0), block(BlockState::Used, 4, 1, 0, 1),
                   block(BlockState::Used, 2, 1, 1, 1), block(BlockState::Shared, 4, 2, 2, 2),
                   block(BlockState::Reserved, 0, 1, 4, 1), block(BlockState::CachedFree, 4, 0, 0, 0)},
        .owners = {0, 0, 0, 1, 1},
        .sequences = {sequence(0), sequence(1)},
        .fragmentation = {},
    });
}

std::shared_ptr<const PoolSnapshot> uniformPool(std::size_t n, BlockState state) {
    PoolSnapshot s{.mode = AllocationMode::Paged,
                   .layout = KvLayout(KvGeometry{1, 1, 8}, KvDtype::F16, kBlockSize),
                   .blocks = {},
                   .owners = {3},
                   .sequences = {sequence(3)},
                   .fragmentation = {}};
    s.blocks.assign(n, block(state, state == BlockState::Free ? 0 : 4, state == BlockState::Free ? 0 : 1, 0,
                             state == BlockState::Free ? 0 : 1));
    return std::make_shared<const PoolSnapshot>(std::move(s));
}

// n free blocks but for `used` full ones from `first`, held by sequence 3.
std::shared_ptr<const PoolSnapshot> sparsePool(std::size_t n, std::size_t first, std::size_t used) {
    PoolSnapshot s = *uniformPool(n, BlockState::Free);
    for (std::size_t b = first; b < first + used; ++b)
        s.blocks[b] = block(BlockState::Used, kBlockSize, 1, 0, 1);
    return std::make_shared<const PoolSnapshot>(std::move(s));
}

SequencePalette letters() {
    return SequencePalette([](SeqId seq) { return QString::fromStdString(sequence_name(seq)); });
}

QImage render(BlockMapWidget& widget) {
    QImage image(widget.size(), QImage::Format_RGB32);
    widget.render(&image);
    return image;
}

int countPixels(const QImage& image, const QRect& cell, QRgb color) {
    int n = 0;
    for (int y = cell.top(); y <= cell.bottom(); ++y)
        for (int x = cell.left(); x <= cell.right(); ++x)
            n += image.pixel(x, y) == color ? 1 : 0;
    return n;
}

} // namespace

class TestBlockMapWidget : public QObject {
    Q_OBJECT

private:
    SequencePalette palette_ = letters();
    QRgb a_ = palette_.color(0);
    QRgb b_ = palette_.color(1);

    // A widget showing sixBlocks() in large cells.
    void showSix(BlockMapWidget& widget) {
        widget.setSequencePalette(letters());
        widget.setSnapshot(sixBlocks());
        widget.resize(300, 60);
    }

private slots:
    void sequenceColorsDiffer() { QVERIFY(a_ != b_); }

    void eachStateHasItsLook() {
        BlockMapWidget widget;
        showSix(widget);
        const QImage image = render(widget);
        const auto at = [&](int b, double fx, double fy) {
            const QRect r = widget.blockRect(static_cast<BlockId>(b));
            return image.pixel(r.left() + static_cast<int>(fx * (r.width() - 1)),
                               r.top() + static_cast<int>(fy * (r.height() - 1)));
        };
        QVERIFY(widget.blockRect(0).width() >= 20);
        QCOMPARE(at(0, 0.5, 0.5), block_colors::kFree);
        QCOMPARE(at(1, 0.5, 0.1), a_);                           // full: owner colour top to bottom
        QCOMPARE(at(1, 0.5, 0.9), a_);
        QCOMPARE(at(2, 0.5, 0.1), block_colors::empty_slots(a_)); // half full: tint above...
        QCOMPARE(at(2, 0.5, 0.9), a_);                           // ...owner colour below
        QCOMPARE(at(4, 0.0, 0.5), b_);                           // reserved: owner outline...
        QCOMPARE(at(4, 0.5, 0.5), block_colors::reserved_inside(b_)); // ...hollow inside
        QCOMPARE(at(5, 0.0, 0.0), block_colors::kCachedFree);    // cached free: grey...
        QCOMPARE(at(5, 0.5, 0.5), block_colors::kCachedMark);    // ...with a dot
    }

    void sharedIsHatchedUsedIsNot() {
        BlockMapWidget widget;
        showSix(widget);
        const QImage image = render(widget);
        const QRect shared = widget.blockRect(3);
        const int area = shared.width() * shared.height();
        const int hatch = countPixels(image, shared, block_colors::shared_hatch(a_));
        QVERIFY2(hatch > area / 6 && hatch < area / 2, qPrintable(QString::number(hatch)));
        QCOMPARE(countPixels(image, shared, a_), area - hatch);
        QCOMPARE(countPixels(image, widget.blockRect(1), block_colors::shared_hatch(a_)), 0);
    }

    void hitTestingFindsEveryBlock() {
        BlockMapWidget widget;
        showSix(widget);
        for (BlockId b = 0; b < 6; ++b) {
            const QRect r = widget.blockRect(b);
            QCOMPARE(widget.blockAt(r.center()), std::optional<BlockId>(b));
            QCOMPARE(widget.blockAt(r.topLeft()), std::optional<BlockId>(b));
            QCOMPARE(widget.blockAt(r.bottomRight()), std::optional<BlockId>(b));
        }
        const QRect last = widget.blockRect(5);
        QCOMPARE(widget.blockAt(last.topRight() + QPoint(1, 0)), std::nullopt); // the gap
        QCOMPARE(widget.blockAt(QPoint(last.right() + 30, last.center().y())), std::nullopt);
        QCOMPARE(widget.blockAt(QPoint(-1, 5)), std::nullopt);
    }

    void tooltipExplainsTheBlock() {
        BlockMapWidget widget;
        showSix(widget);
        const QString shared = widget.toolTipFor(3);
        QVERIFY2(shared.startsWith(QStringLiteral("Block 3 · Shared")), qPrintable(shared));
        QVERIFY2(shared.contains(QStringLiteral("Owners: A, B")), qPrintable(shared));
        QVERIFY2(shared.contains(QStringLiteral("Ref count: 2")), qPrintable(shared));
        QVERIFY2(shared.contains(QStringLiteral("Fill: 4 / 4 slots")), qPrintable(shared));
        const QString half = widget.toolTipFor(2);
        QVERIFY2(half.contains(QStringLiteral("Owner: A")) && half.contains(QStringLiteral("Fill: 2 / 4 slots")),
                 qPrintable(half));
        QVERIFY(widget.toolTipFor(5).contains(QStringLiteral("Cached free")));
        QVERIFY(widget.toolTipFor(4).contains(QStringLiteral("Reserved")));
        QVERIFY(widget.toolTipFor(6).isEmpty());
    }

    void hoverShowsTheTooltip() {
        BlockMapWidget widget;
        showSix(widget);
        widget.show();
        QVERIFY(QTest::qWaitForWindowExposed(&widget));
        const QPoint pos = widget.blockRect(3).center();
        QHelpEvent help(QEvent::ToolTip, pos, widget.mapToGlobal(pos));
        QApplication::sendEvent(&widget, &help);
        QTRY_COMPARE(QToolTip::text(), widget.toolTipFor(3));
    }

    void poolsThatFitKeepOneCellPerBlock() {
        BlockMapWidget widget;
        widget.setSnapshot(uniformPool(20000, BlockState::Used));
        widget.resize(1280, 720); // 20,000 cells of 5 px fit in 1276x716
        QCOMPARE(widget.cells().scale.perCell, std::size_t{1});
        QVERIFY(widget.cells().cell >= 4);
        const QRect last = widget.blockRect(19999);
        QVERIFY2(widget.rect().contains(last), "the last block must be on screen");
        QCOMPARE(widget.blockAt(last.center()), std::optional<BlockId>(19999));
        QCOMPARE(widget.blockAt(widget.blockRect(12345).center()), std::optional<BlockId>(12345));
        QCOMPARE(render(widget).pixel(last.center()), SequencePalette().color(3));
        QVERIFY(widget.minimapRect().isNull()); // the map is the whole pool
    }

    // 200,000 blocks, most free, a run of used ones in the middle: every
    // block is in a readable cell, and the few used ones show.
    void largePoolsGatherRunsOfBlocksIntoReadableCells() {
        BlockMapWidget widget;
        widget.resize(1280, 720);
        widget.setSnapshot(sparsePool(200000, 100000, 3));
        const BlockMapLayout& l = widget.cells();
        QVERIFY2(l.cell >= 4, qPrintable(QString::number(l.cell)));
        QVERIFY(l.scale.perCell > 1);
        QVERIFY(l.showsAll());
        QCOMPARE(l.cellCount(), (std::size_t{200000} + l.scale.perCell - 1) / l.scale.perCell);
        QVERIFY(widget.rect().contains(widget.blockRect(199999)));
        QCOMPARE(widget.blockAt(widget.blockRect(5).center()), std::nullopt); // a run, not one block
        // The cell holding blocks 100,000-100,002 shows them in their owner's colour.
        const QRect cell = widget.blockRect(100000);
        QVERIFY(countPixels(render(widget), cell, SequencePalette().color(3)) > 0);
        QCOMPARE(countPixels(render(widget), widget.blockRect(0), SequencePalette().color(3)), 0);
    }

    void aRunsTooltipSaysWhatItHolds() {
        BlockMapWidget widget;
        widget.resize(600, 300);
        widget.setSnapshot(sparsePool(100000, 12288, 20));
        const std::size_t k = widget.cells().scale.perCell;
        QVERIFY(k > 20);
        const QPoint at = widget.blockRect(12288).center();
        const std::vector<BlockId> run = widget.blocksAt(at);
        QCOMPARE(run.size(), k);
        const QString tip = widget.toolTipAt(at);
        const QString first = QLocale(QLocale::English).toString(static_cast<qulonglong>(run.front()));
        QVERIFY2(tip.startsWith(QStringLiteral("Blocks %1\u2013").arg(first)), qPrintable(tip));
        // 20 used by one request (or split over two cells), the rest free.
        QVERIFY2(tip.contains(QStringLiteral(" used by 1 request, 0 cached, ")), qPrintable(tip));
        QVERIFY2(tip.contains(QStringLiteral("zoom in")), qPrintable(tip));
    }

    void fitShowsTheWholePoolInAnyArea() {
        const BlockMapLayout tiny = BlockMapLayout::fit(QSize(20, 20), 1000);
        QVERIFY(tiny.showsAll());
        QVERIFY(tiny.cell >= 4);
        QCOMPARE(tiny.cellCount() * tiny.scale.perCell >= 1000, true);
        const BlockMapLayout big = BlockMapLayout::fit(QSize(800, 800), 4);
        QCOMPARE(big.scale.pitch, BlockMapLayout::kMaxPitch);
        QCOMPARE(big.columns, 4);
        QCOMPARE(big.rows, 1);
    }

    void zoomGoesDownToSingleBlocksAroundTheCursor() {
        BlockMapWidget widget;
        widget.resize(800, 500);
        widget.setSnapshot(sparsePool(200000, 150000, 64));
        const BlockId target = 150000;
        const QPoint at = widget.blockRect(target).center();
        std::size_t steps = 0;
        while (widget.canZoomIn() && widget.cells().scale.perCell > 1) {
            QWheelEvent wheel(at, widget.mapToGlobal(at), {}, QPoint(0, 120), Qt::NoButton, Qt::NoModifier,
                              Qt::NoScrollPhase, false);
            QApplication::sendEvent(&widget, &wheel);
            ++steps;
            // The block under the cursor stays at its height, give or take a row
            // (rows wrap, so it moves sideways), while the wheel turns on.
            const QRect now = widget.blockRect(target);
            QVERIFY2(std::abs(now.center().y() - at.y()) <= widget.cells().scale.pitch,
                     qPrintable(QStringLiteral("step %1: y %2 vs %3").arg(steps).arg(now.center().y()).arg(at.y())));
        }
        QCOMPARE(widget.cells().scale.perCell, std::size_t{1});
        QCOMPARE(widget.zoomStep(), steps);
        QCOMPARE(widget.blockAt(widget.blockRect(target).center()), std::optional<BlockId>(target));
        QVERIFY(!widget.cells().showsAll());
        QVERIFY(!widget.minimapRect().isNull()); // the whole pool at the right
        QVERIFY(widget.scaleText().startsWith(QStringLiteral("1 cell = 1 block")));
        QVERIFY(widget.scaleText().contains(QStringLiteral("of 200,000 blocks in view")));
        // Back out with the keyboard.
        QTest::keyClick(&widget, Qt::Key_0);
        QCOMPARE(widget.zoomStep(), std::size_t{0});
        QVERIFY(widget.cells().showsAll());
        QVERIFY(widget.minimapRect().isNull());
    }

    void panningReachesEveryBlock() {
        BlockMapWidget widget;
        widget.resize(800, 500);
        widget.setSnapshot(sparsePool(200000, 0, 1));
        while (widget.cells().scale.perCell > 1)
            widget.zoomIn(); // around the middle
        QVERIFY(!widget.rect().intersects(widget.blockRect(0)));
        QTest::keyClick(&widget, Qt::Key_Home);
        QVERIFY(widget.rect().contains(widget.blockRect(0)));
        QVERIFY(!widget.rect().intersects(widget.blockRect(199999)));
        QTest::keyClick(&widget, Qt::Key_End);
        QVERIFY(widget.rect().contains(widget.blockRect(199999)));
        // The minimap's top goes back to the first blocks.
        const QRect map = widget.minimapRect();
        QTest::mouseClick(&widget, Qt::LeftButton, {}, QPoint(map.center().x(), map.top()));
        QVERIFY(widget.rect().contains(widget.blockRect(0)));
        // Dragging the map pans it.
        const int before = widget.cells().scroll;
        QTest::mousePress(&widget, Qt::LeftButton, {}, QPoint(100, 300));
        QMouseEvent move(QEvent::MouseMove, QPointF(100, 100), widget.mapToGlobal(QPointF(100, 100)), Qt::NoButton,
                         Qt::LeftButton, Qt::NoModifier);
        QApplication::sendEvent(&widget, &move);
        QTest::mouseRelease(&widget, Qt::LeftButton, {}, QPoint(100, 100));
        QCOMPARE(widget.cells().scroll, before + 200);
    }

    void anotherPoolSizeGoesBackToFit() {
        BlockMapWidget widget;
        widget.resize(800, 500);
        widget.setSnapshot(sparsePool(200000, 0, 1));
        widget.zoomIn();
        QCOMPARE(widget.zoomStep(), std::size_t{1});
        widget.setSnapshot(sparsePool(200000, 5, 1)); // the same pool, a step later: zoom kept
        QCOMPARE(widget.zoomStep(), std::size_t{1});
        widget.setSnapshot(sparsePool(50000, 0, 1));
        QCOMPARE(widget.zoomStep(), std::size_t{0});
    }

    void newSnapshotRepaints() {
        BlockMapWidget widget;
        widget.resize(200, 60);
        widget.setSnapshot(uniformPool(8, BlockState::Free));
        const QPoint c = widget.blockRect(0).center();
        QCOMPARE(render(widget).pixel(c), block_colors::kFree);
        widget.setSnapshot(uniformPool(8, BlockState::Used));
        QCOMPARE(render(widget).pixel(c), SequencePalette().color(3));
    }
};

QTEST_MAIN(TestBlockMapWidget)
#include "test_block_map_widget.moc"
