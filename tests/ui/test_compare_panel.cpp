// The Compare A/B panel without an engine: "—" where an engine has no
// data, never a zero. The panel with two engines on stories260K, in the
// main window, is test_compare_panel_model (label model).
#include <QtTest>

#include <QPushButton>
#include <QStandardPaths>

#include "ui/blockmap/live_pool_panel.h"
#include "ui/compare/compare_panel.h"
#include "ui/settings/engine_settings_panel.h"

using namespace kvscope;
using namespace kvscope::ui;

namespace {

const QString kNoData = QStringLiteral("\u2014");

// Gemma-like layers (two full attention, four of a window of 8, two per
// block: groups 0 full, 1 and 2 the window's), their blocks in use.
std::shared_ptr<const EngineSnapshot> hybridSnapshot(bool keepWhole, std::uint16_t windowBlocks) {
    const std::uint32_t windows[] = {0, 8, 8, 0, 8, 8};
    auto pool = std::make_shared<PoolSnapshot>(
        PoolSnapshot{.layout = KvLayout({6, 1, 8}, KvDtype::F16, 4, KvGroups::from_windows(windows, keepWhole)),
                     .blocks = {},
                     .owners = {},
                     .sequences = {},
                     .fragmentation = {}});
    pool->blocks.push_back({.state = BlockState::Used, .fill = 4, .ref_count = 1, .group = 0});
    for (std::uint16_t b = 0; b < windowBlocks; ++b)
        pool->blocks.push_back(
            {.state = BlockState::Used, .fill = 4, .ref_count = 1, .group = static_cast<std::uint16_t>(1 + b % 2)});
    pool->blocks.push_back({});
    pool->fragmentation = compute_fragmentation(pool->blocks, 4, AllocationMode::Paged, 0);
    auto s = std::make_shared<EngineSnapshot>();
    s->pool = pool;
    s->running = 2;
    return s;
}

} // namespace

class TestComparePanel : public QObject {
    Q_OBJECT
private slots:
    void initTestCase() { QStandardPaths::setTestModeEnabled(true); }

    // "Start B" and "Apply" side by side: each says which engine it acts on.
    void theButtonsSayWhatTheyDo() {
        ComparePanel panel;
        const auto tip = [&panel](const char* name) {
            auto* button = panel.findChild<QPushButton*>(QString::fromLatin1(name));
            return button ? button->toolTip() : QString();
        };
        QVERIFY2(tip("startCompare").startsWith(QStringLiteral("Start engine B beside A")), qPrintable(tip("startCompare")));
        QVERIFY2(tip("applyConfig").startsWith(QStringLiteral("Rebuild the running engine B")), qPrintable(tip("applyConfig")));
        QVERIFY2(tip("stopCompare").startsWith(QStringLiteral("Stop engine B")), qPrintable(tip("stopCompare")));
    }

    void noDataIsADashNotZero() {
        ComparePanel panel;
        panel.show(); // A's figures follow while the tab is shown
        EngineSnapshot idle;
        idle.pool = std::make_shared<PoolSnapshot>(PoolSnapshot{.layout = KvLayout({1, 1, 8}, KvDtype::F16, 16),
                                                                .blocks = {},
                                                                .owners = {},
                                                                .sequences = {},
                                                                .fragmentation = {}});
        QVERIFY(!compareFigure(ComparePanel::TtftP50, idle)); // no first token timed yet
        QVERIFY(!compareFigure(ComparePanel::GenerationTps, idle));
        QCOMPARE(*compareFigure(ComparePanel::Running, idle), 0.0);
        panel.showSnapshotA(std::make_shared<const EngineSnapshot>(idle), {});
        QCOMPARE(panel.cell(ComparePanel::TtftP50, 0), kNoData);
        QCOMPARE(panel.cell(ComparePanel::Running, 0), QStringLiteral("0"));
        QCOMPARE(panel.cell(ComparePanel::Running, 1), kNoData); // no B
        QCOMPARE(panel.cell(ComparePanel::Running, 2), kNoData);
        QCOMPARE(panel.settingCell(ComparePanel::BlockSize, 0), QStringLiteral("16"));
        QCOMPARE(panel.cell(ComparePanel::BlocksHeld, 0), QStringLiteral("0"));
        QCOMPARE(panel.cell(ComparePanel::BlocksPerRunning, 0), kNoData); // no sequence running
        // One group: no per-kind rows, no window setting, and B starts as the classic contiguous comparison.
        QVERIFY(panel.kindRows().isEmpty());
        QCOMPARE(panel.settingCell(ComparePanel::WindowLayers, 0), kNoData);
        auto* formB = panel.findChild<EngineSettingsPanel*>(QStringLiteral("compareSettings"));
        QCOMPARE(formB->config().allocation, AllocationMode::Contiguous);
        QVERIFY(!formB->config().swa_full);
    }

    // Each engine's ended requests, by how they ended; B's map says B has
    // not started rather than that no model is loaded.
    void requestCountsAndBsIdleMap() {
        ComparePanel panel;
        panel.show();
        QVERIFY2(panel.mapB()->figures().contains(QStringLiteral("B is not running: press Start B")),
                 qPrintable(panel.mapB()->figures()));
        auto a = std::make_shared<EngineSnapshot>(*hybridSnapshot(false, 2));
        a->completed_requests = 215;
        a->aborted_requests = 4793;
        a->failed_requests = 2;
        panel.showSnapshotA(a, {});
        QCOMPARE(panel.cell(ComparePanel::RequestsCompleted, 0), QStringLiteral("215"));
        QCOMPARE(panel.cell(ComparePanel::RequestsAborted, 0), QStringLiteral("4793"));
        QCOMPARE(panel.cell(ComparePanel::RequestsFailed, 0), QStringLiteral("2"));
        QCOMPARE(panel.cell(ComparePanel::RequestsCompleted, 1), kNoData); // no B
    }

    void theModelsShapeSuggestsBBeforeAnySnapshot() {
        ComparePanel panel;
        auto* formB = panel.findChild<EngineSettingsPanel*>(QStringLiteral("compareSettings"));
        panel.setModelShape(ModelShape{QStringLiteral("windowed"), {6, 1, 8}, 512, {0, 8, 8, 0, 8, 8}});
        QVERIFY(formB->config().swa_full);
        QCOMPARE(formB->config().allocation, AllocationMode::Paged);
        panel.setModelShape(ModelShape{QStringLiteral("dense"), {6, 1, 8}, 512}); // back to the classic comparison
        QVERIFY(!formB->config().swa_full);
        QCOMPARE(formB->config().allocation, AllocationMode::Contiguous);
    }

    void windowModelsCompareBlocksPerKind() {
        ComparePanel panel;
        panel.show();
        panel.showSnapshotA(hybridSnapshot(false, 4), {});
        QCOMPARE(panel.kindRows(),
                 (QStringList{QStringLiteral("full attention, 2 layers"), QStringLiteral("sliding window 8, 4 layers")}));
        QCOMPARE(panel.kindCell(0, 0), QStringLiteral("1"));
        QCOMPARE(panel.kindCell(1, 0), QStringLiteral("4"));
        QCOMPARE(panel.kindCell(1, 1), kNoData); // no B yet
        QCOMPARE(panel.cell(ComparePanel::BlocksHeld, 0), QStringLiteral("5"));
        QCOMPARE(panel.cell(ComparePanel::BlocksPerRunning, 0), QStringLiteral("2.5")); // 5 blocks, 2 running
        QCOMPARE(panel.settingCell(ComparePanel::WindowLayers, 0), QStringLiteral("free"));
        // B's untouched form becomes A's settings with the window layers kept whole.
        auto* formB = panel.findChild<EngineSettingsPanel*>(QStringLiteral("compareSettings"));
        QVERIFY(formB->config().swa_full);
        QCOMPARE(formB->config().allocation, AllocationMode::Paged);
        // A form the user changed stays as they left it.
        EngineConfig mine = formB->config();
        mine.swa_full = false;
        mine.block_size = 32;
        formB->setConfig(mine);
        panel.showSnapshotA(hybridSnapshot(false, 6), {});
        QCOMPARE(formB->config().block_size, std::uint32_t{32});
        QVERIFY(!formB->config().swa_full);
        QCOMPARE(panel.kindCell(1, 0), QStringLiteral("6"));
    }
};

QTEST_MAIN(TestComparePanel)
#include "test_compare_panel.moc"
