// Compare A/B in the main window at its smallest supported size (1024x700),
// with stories260K: each engine's settings side by side, "—" where an
// engine has no data, both replies, whole figures, and nothing of B left
// once it stops. KVSCOPE_SCREENSHOT_DIR, when set, receives the tab's PNG.
#include <QtTest>

#include <QDockWidget>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QSignalSpy>
#include <QSpinBox>
#include <QStandardPaths>
#include <QTableWidget>

#include "support/test_models.h"
#include "ui/blockmap/block_map_widget.h"
#include "ui/compare/compare_panel.h"
#include "ui/blockmap/live_pool_panel.h"
#include "ui/shell/main_window.h"

using namespace kvscope;
using namespace kvscope::ui;

namespace {

constexpr int kWaitMs = 60'000;
const QString kNoData = QStringLiteral("\u2014");

// Every cell of the table shows its whole text.
void verifyNothingTruncated(const QTableWidget& table) {
    const QFontMetrics metrics(table.font());
    for (int r = 0; r < table.rowCount(); ++r)
        for (int c = 0; c < table.columnCount(); ++c) {
            const QString text = table.item(r, c)->text();
            QVERIFY2(metrics.horizontalAdvance(text) + 6 <= table.columnWidth(c),
                     qPrintable(QStringLiteral("'%1' in a %2 px column").arg(text).arg(table.columnWidth(c))));
        }
}

void saveScreenshot(QWidget& window, const QString& name) {
    const QString dir = qEnvironmentVariable("KVSCOPE_SCREENSHOT_DIR");
    if (!dir.isEmpty())
        QVERIFY(window.grab().save(dir + QLatin1Char('/') + name));
}

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

    void bothEnginesSideBySideAt1024x700() {
        KVSCOPE_REQUIRE_MODEL(model, "stories260K-f32.gguf");
        MainWindow window;
        window.resize(1024, 700);
        window.show();
        QSignalSpy ready(&window, &MainWindow::modelReady);
        window.openModel(ModelSource::file(model));
        QVERIFY(ready.wait(kWaitMs));
        ComparePanel* compare = window.compare();
        window.findChild<QTabWidget*>()->setCurrentIndex(1);
        compare->findChild<QSpinBox*>(QStringLiteral("blockSize"))->setValue(32);
        QSignalSpy shownB(compare, &ComparePanel::snapshotBShown);
        compare->findChild<QPushButton*>(QStringLiteral("startCompare"))->click();
        QTRY_VERIFY_WITH_TIMEOUT(!shownB.isEmpty(), kWaitMs);
        // What each runs, side by side.
        QCOMPARE(compare->settingCell(ComparePanel::BlockSize, 0), QStringLiteral("16"));
        QCOMPARE(compare->settingCell(ComparePanel::BlockSize, 1), QStringLiteral("32"));
        QCOMPARE(compare->settingCell(ComparePanel::Allocation, 1), QStringLiteral("contiguous"));
        QVERIFY(compare->settingCell(ComparePanel::Preemption, 0) != kNoData);
        QCOMPARE(compare->cell(ComparePanel::TtftP50, 1), kNoData); // B has timed no first token yet

        QSignalSpy finished(&window, &MainWindow::turnFinished);
        window.submitPrompt(QStringLiteral("Once upon a time"));
        QVERIFY(finished.wait(kWaitMs));
        QTRY_VERIFY_WITH_TIMEOUT(!compare->replyText(1).isEmpty() && compare->chatRequestsB() > 0, kWaitMs);
        QTRY_VERIFY_WITH_TIMEOUT(compare->cell(ComparePanel::TtftP50, 1) != kNoData, kWaitMs);
        QVERIFY(!compare->replyText(0).isEmpty());
        QVERIFY(compare->cell(ComparePanel::TtftP50, 2) != kNoData);
        // B's replay keeps the steps it did not publish, as A's does.
        QTRY_VERIFY_WITH_TIMEOUT(compare->mapB()->replay().size() > static_cast<std::size_t>(shownB.count()), kWaitMs);
        QCoreApplication::processEvents();
        verifyNothingTruncated(*compare->findChild<QTableWidget*>(QStringLiteral("compareTable")));
        saveScreenshot(window, QStringLiteral("compare-1024x700.png"));

        // Apply on B replaces its engine: its request ids mean nothing now.
        compare->findChild<QWidget*>(QStringLiteral("compareSettings"))
            ->findChild<QPushButton*>(QStringLiteral("applyConfig"))
            ->click();
        QTRY_VERIFY_WITH_TIMEOUT(compare->chatRequestsB() == 0, kWaitMs);

        compare->findChild<QPushButton*>(QStringLiteral("stopCompare"))->click();
        QVERIFY(!compare->isRunning());
        QVERIFY(!compare->mapB()->map()->snapshot());
        QVERIFY(compare->replyText(1).isEmpty());
        QCOMPARE(compare->cell(ComparePanel::BlocksUsed, 1), kNoData);
        QCOMPARE(compare->settingCell(ComparePanel::BlockSize, 1), kNoData);
        QVERIFY(!compare->findChild<QLabel*>(QStringLiteral("compareNote"))->text().contains(QStringLiteral("B runs")));
        saveScreenshot(window, QStringLiteral("compare-stopped-1024x700.png"));

        // The KV quantization dock at this size: charts keep their height
        // (the dock scrolls) and name the model's figures.
        window.findChild<QTabWidget*>()->setCurrentIndex(0);
        auto* quant = window.findChild<QDockWidget*>(QStringLiteral("kvQuantDock"));
        QVERIFY(quant);
        quant->raise();
        QTest::qWait(300); // the panel redraws at most every 250 ms
        for (const char* name : {"bytesPerTokenPlot", "kvNowPlot"}) {
            const auto* plot = quant->findChild<QWidget*>(QLatin1String(name));
            QVERIFY(plot);
            QVERIFY2(plot->height() >= 150, qPrintable(QString::number(plot->height())));
        }
        saveScreenshot(window, QStringLiteral("kv-quant-1024x700.png"));
    }
};

QTEST_MAIN(TestComparePanel)
#include "test_compare_panel.moc"
