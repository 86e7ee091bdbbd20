// BlockMapWidget offscreen: the pixels of each block state, hit testing,
// tooltips, and a 65,536-block pool shrinking its cells to fit.
#include <QHelpEvent>
#include <QImage>
#include <QToolTip>
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

    void largePoolShrinksCellsToFit() {
        BlockMapWidget widget;
        widget.setSnapshot(uniformPool(65536, BlockState::Used));
        widget.resize(1280, 720);
        const QRect last = widget.blockRect(65535);
        QVERIFY(last.width() >= 1 && last.width() <= 4);
        QVERIFY2(widget.rect().contains(last), "the last block must be on screen");
        QCOMPARE(widget.blockAt(last.center()), std::optional<BlockId>(65535));
        QCOMPARE(widget.blockAt(widget.blockRect(40000).center()), std::optional<BlockId>(40000));
        const QImage image = render(widget);
        QCOMPARE(image.pixel(last.center()), SequencePalette().color(3));
    }

    void layoutSaysWhenNotEverythingFits() {
        const BlockMapLayout l = BlockMapLayout::fit(QSize(20, 20), 1000);
        QCOMPARE(l.pitch, 1);
        QVERIFY(l.visible < l.blocks);
        QVERIFY(l.cellRect(l.visible).isNull());
        const BlockMapLayout big = BlockMapLayout::fit(QSize(800, 800), 4);
        QCOMPARE(big.pitch, BlockMapLayout::kMaxPitch);
        QCOMPARE(big.columns, 4);
        QCOMPARE(big.rows, 1);
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
