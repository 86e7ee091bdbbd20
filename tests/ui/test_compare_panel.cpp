// The Compare A/B panel without an engine: "—" where an engine has no
// data, never a zero. The panel with two engines on stories260K, in the
// main window, is test_compare_panel_model (label model).
#include <QtTest>

#include <QStandardPaths>

#include "ui/compare/compare_panel.h"

using namespace kvscope;
using namespace kvscope::ui;

namespace {

const QString kNoData = QStringLiteral("\u2014");

} // namespace

class TestComparePanel : public QObject {
    Q_OBJECT
private slots:
    void initTestCase() { QStandardPaths::setTestModeEnabled(true); }

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
    }
};

QTEST_MAIN(TestComparePanel)
#include "test_compare_panel.moc"
