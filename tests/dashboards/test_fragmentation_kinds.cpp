// The fragmentation heatmap of a pool with KV cache groups: every block, or
// the blocks one kind of attention layer holds (the rest drawn as free),
// each kind's history recorded all along; no selector for one group.
#include <QtTest>

#include <QComboBox>
#include <QLocale>
#include <QPalette>

#include "engine/kv/fragmentation.h"
#include "ui/dashboards/fragmentation_panel.h"
#include "ui/look/text_status.h"

using namespace kvscope;
using namespace kvscope::ui;

namespace {

constexpr std::uint32_t kBlockSize = 4;

// Two full-attention layers and four of a window of 8, two per block:
// group 0 is full attention, groups 1 and 2 the window's. Block 0 is the
// full group's (full), blocks 1 and 2 the window's (half, full), block 3
// free.
std::shared_ptr<const EngineSnapshot> hybrid(std::uint64_t step) {
    const std::uint32_t windows[] = {0, 8, 8, 0, 8, 8};
    auto pool = std::make_shared<PoolSnapshot>(PoolSnapshot{
        .layout = KvLayout({6, 1, 8}, KvDtype::F16, kBlockSize, KvGroups::from_windows(windows)),
        .blocks = {{.state = BlockState::Used, .fill = 4, .ref_count = 1, .group = 0},
                   {.state = BlockState::Used, .fill = 2, .ref_count = 1, .group = 1},
                   {.state = BlockState::Used, .fill = 4, .ref_count = 1, .group = 2},
                   {}},
        .owners = {},
        .sequences = {},
        .fragmentation = {}});
    pool->fragmentation = compute_fragmentation(pool->blocks, kBlockSize, AllocationMode::Paged, 0);
    auto s = std::make_shared<EngineSnapshot>();
    s->step = step;
    s->pool = pool;
    return s;
}

// One chat's blocks at the start of a pool (2,048 blocks unless given):
// `used` blocks, all full but the last, which holds one token.
std::shared_ptr<const EngineSnapshot> oneChat(std::uint64_t step, std::size_t used, std::size_t pool_blocks = 2048) {
    std::vector<BlockInfo> blocks(pool_blocks);
    for (std::size_t b = 0; b < used; ++b)
        blocks[b] = {.state = BlockState::Used, .fill = static_cast<std::uint16_t>(b + 1 < used ? kBlockSize : 1), .ref_count = 1};
    auto pool = std::make_shared<PoolSnapshot>(PoolSnapshot{.layout = KvLayout({6, 1, 8}, KvDtype::F16, kBlockSize),
                                                            .blocks = blocks,
                                                            .owners = {},
                                                            .sequences = {},
                                                            .fragmentation = {}});
    pool->fragmentation = compute_fragmentation(pool->blocks, kBlockSize, AllocationMode::Paged, 0);
    auto s = std::make_shared<EngineSnapshot>();
    s->step = step;
    s->pool = pool;
    return s;
}

std::vector<double> column(const FragmentationPanel& panel, int x) {
    std::vector<double> fills;
    for (int y = 0; y < panel.heatmapSize().height(); ++y)
        fills.push_back(panel.heatmapCell(x, y));
    return fills;
}

} // namespace

class TestFragmentationKinds : public QObject {
    Q_OBJECT
private slots:
    void eachKindHasItsHeatmap() {
        FragmentationPanel panel;
        panel.show();
        panel.setSnapshot(hybrid(1));
        panel.setSnapshot(hybrid(2));
        QCOMPARE(panel.heatmapKinds(), (QStringList{QStringLiteral("every group"),
                                                    QStringLiteral("full attention, 2 layers"),
                                                    QStringLiteral("sliding window 8, 4 layers")}));
        QVERIFY(panel.findChild<QComboBox*>(QStringLiteral("heatmapKind"))->isVisible());
        QCOMPARE(column(panel, 0), (std::vector<double>{1.0, 0.5, 1.0, 0.0}));
        panel.setHeatmapKind(1);
        QCOMPARE(panel.heatmapKind(), 1);
        QCOMPARE(column(panel, 0), (std::vector<double>{1.0, 0.0, 0.0, 0.0}));
        QCOMPARE(column(panel, 1), (std::vector<double>{1.0, 0.0, 0.0, 0.0})); // recorded before it was picked
        panel.setHeatmapKind(2);
        QCOMPARE(column(panel, 1), (std::vector<double>{0.0, 0.5, 1.0, 0.0}));
    }

    void oneGroupHasNoSelector() {
        auto s = std::make_shared<EngineSnapshot>();
        s->step = 1;
        auto pool = std::make_shared<PoolSnapshot>(PoolSnapshot{.layout = KvLayout({6, 1, 8}, KvDtype::F16, kBlockSize),
                                                                .blocks = {{.state = BlockState::Used, .fill = 4, .ref_count = 1}, {}},
                                                                .owners = {},
                                                                .sequences = {},
                                                                .fragmentation = {}});
        s->pool = pool;
        FragmentationPanel panel;
        panel.show();
        panel.setSnapshot(s);
        QCOMPARE(panel.heatmapKinds(), QStringList{QStringLiteral("every group")});
        QVERIFY(!panel.findChild<QComboBox*>(QStringLiteral("heatmapKind"))->isVisible());
        QCOMPARE(column(panel, 0), (std::vector<double>{1.0, 0.0}));
    }

    // One chat in a 2,048-block pool holds 3 blocks: the heatmap's rows
    // cover the blocks in use and some headroom, so the chat is a band a
    // fifth of the plot high, not one row of 256 (a pixel); its axis says
    // which blocks it shows. A later step using block 99 widens the
    // extent to a power of two above it.
    void oneChatsHeatmapIsReadable() {
        FragmentationPanel panel;
        panel.show();
        panel.setSnapshot(oneChat(1, 3));
        const QSize size = panel.heatmapSize();
        int used = 0;
        for (int y = 0; y < size.height(); ++y)
            used += panel.heatmapCell(size.width() - 1, y) > 0;
        QCOMPARE(used, 3);
        QVERIFY2(used >= size.height() / 8, qPrintable(QStringLiteral("%1 of %2 rows in use").arg(used).arg(size.height())));
        QCOMPARE(panel.heatmapExtent(), std::size_t{16});
        QCOMPARE(panel.heatmapAxisLabel(), tr("blocks 0–15 of %1").arg(QLocale().toString(2048)));
        panel.setSnapshot(oneChat(2, 100));
        QCOMPARE(panel.heatmapExtent(), std::size_t{128}); // 100 blocks and a quarter more, to a power of two
        QCOMPARE(panel.blocksPerRow(), std::size_t{1});
        QCOMPARE(panel.heatmapCell(0, 2), 0.25); // the first step's last block, shown over the new extent
    }

    // The same in a pool of 200,000 blocks (a vLLM server's on one H100):
    // the rows still cover 16 blocks, one each.
    void oneChatInAHugePoolIsReadable() {
        FragmentationPanel panel;
        panel.show();
        panel.setSnapshot(oneChat(1, 3, 200000));
        QCOMPARE(panel.heatmapSize().height(), 16);
        QCOMPARE(column(panel, 0), (std::vector<double>{1, 1, 0.25, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}));
        QCOMPARE(panel.heatmapAxisLabel(), tr("blocks 0–15 of %1").arg(QLocale().toString(200000)));
        // A workload's 5,000 blocks then: rows of 32 blocks over 8,192, each
        // column's mean exact (the workload's kept in runs of 8 blocks).
        panel.setSnapshot(oneChat(2, 5000, 200000));
        QCOMPARE(panel.heatmapExtent(), std::size_t{8192});
        QCOMPARE(panel.blocksPerRow(), std::size_t{32});
        QCOMPARE(panel.heatmapCell(0, 0), 2.25 / 32);
        QCOMPARE(panel.heatmapCell(1, 155), 1.0);
        QCOMPARE(panel.heatmapCell(1, 156), 7.25 / 32); // blocks 4,992-5,023: 7 full, one a quarter
        QCOMPARE(panel.heatmapCell(1, 157), 0.0);
    }

    // The colour scale has a dark version: on a dark palette free blocks
    // are a dark field (not white) and fuller blocks are lighter; back on a
    // light one, the light version. The waste lines stand out from the
    // plot's background on either.
    void heatmapFollowsTheTheme() {
        FragmentationPanel panel;
        const QColor lightFree = panel.heatmapColour(0);
        QPalette dark = panel.palette();
        dark.setColor(QPalette::Window, QColor(0x2d, 0x2f, 0x33));
        dark.setColor(QPalette::Base, QColor(0x1f, 0x21, 0x24));
        const auto linesStandOut = [&panel](const QColor& base) { // WCAG's 3:1 for graphics
            using W = FragmentationPanel::WasteSeries;
            for (W s : {W::Internal, W::Reserved, W::External, W::ContiguousInternal, W::ContiguousReserved})
                QVERIFY2(contrastRatio(panel.wasteSeriesColour(s), base) >= 3.0,
                         qPrintable(panel.wasteSeriesColour(s).name() + QStringLiteral(" on ") + base.name()));
        };
        linesStandOut(panel.palette().color(QPalette::Base));
        panel.setPalette(dark);
        linesStandOut(dark.color(QPalette::Base));
        QVERIFY2(panel.heatmapColour(0).lightness() < 80, qPrintable(panel.heatmapColour(0).name()));
        QVERIFY(panel.heatmapColour(0.5).lightness() > panel.heatmapColour(0).lightness());
        QVERIFY(panel.heatmapColour(1).lightness() > panel.heatmapColour(0.5).lightness());
        panel.setPalette(QPalette());
        QCOMPARE(panel.heatmapColour(0), lightFree);
    }

    // One chat in a large pool: a few tokens of internal waste in its last
    // block are 0.1% of the pool; the waste axis fits them instead of
    // drawing a flat line at the bottom of 0-100%, and its legend entry says
    // the value.
    void oneChatsWasteIsVisible() {
        const auto s = oneChat(1, 3);
        FragmentationPanel panel;
        panel.show();
        panel.setSnapshot(s);
        const double internal = panel.wasteSeries(FragmentationPanel::WasteSeries::Internal).back();
        QVERIFY(internal > 0 && internal < 0.1);
        QVERIFY2(panel.wasteAxisTop() <= 1.0 + 1e-9, qPrintable(QString::number(panel.wasteAxisTop())));
        QVERIFY(panel.wasteAxisTop() >= internal);
        QCOMPARE(panel.wasteSeriesName(FragmentationPanel::WasteSeries::Internal),
                 QStringLiteral("internal (now %1%)").arg(internal, 0, 'f', 2));
    }
};

QTEST_MAIN(TestFragmentationKinds)
#include "test_fragmentation_kinds.moc"
