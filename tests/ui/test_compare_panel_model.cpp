// Compare A/B in the main window at its smallest supported size (1024x700),
// with stories260K: each engine's settings side by side, both replies,
// whole figures, and nothing of B left once it stops; then the KV
// quantization dock at that size. KVSCOPE_SCREENSHOT_DIR, when set,
// receives the tab's PNG. Needs the shared models folder (label model);
// the panel without an engine is test_compare_panel.
#include <QtTest>

#include <algorithm>

#include <QDockWidget>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QSignalSpy>
#include <QSpinBox>
#include <QStandardPaths>
#include <QTableWidget>

#include "support/test_models.h"
#include "support/wait.h"
#include "ui/blockmap/block_map_widget.h"
#include "ui/compare/compare_panel.h"
#include "ui/blockmap/live_pool_panel.h"
#include "ui/dashboards/kv_quant_panel.h"
#include "ui/shell/main_window.h"

using namespace kvscope;
using namespace kvscope::ui;

namespace {

constexpr int kWaitMs = static_cast<int>(kvscope::test::kPatience.count()); // a deadlock guard
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

// The panel is shown and its bars are the latest costs (it redraws at
// most every 250 ms), with no replot of its plots still waiting.
bool showsLatestCosts(const KvQuantPanel& panel) {
    if (!panel.isVisible() || panel.costs().rows.empty())
        return false;
    std::vector<double> perToken, kvMiB;
    for (const KvDtypeCost& r : panel.costs().rows) {
        perToken.push_back(static_cast<double>(r.bytes_per_token));
        if (panel.costs().holdsKv())
            kvMiB.push_back(static_cast<double>(r.kv_bytes) / (1024.0 * 1024.0));
    }
    const auto plots = panel.findChildren<QWidget*>();
    const bool replotWaiting = std::any_of(plots.begin(), plots.end(), [](const QWidget* w) {
        return w->property("kvscopeReplotPending").toBool(); // dashboard_plot.cpp's cooldown
    });
    return panel.barValues(KvQuantPanel::Bars::BytesPerToken) == perToken &&
           panel.barValues(KvQuantPanel::Bars::KvBytes) == kvMiB && !replotWaiting;
}

void saveScreenshot(QWidget& window, const QString& name) {
    const QString dir = qEnvironmentVariable("KVSCOPE_SCREENSHOT_DIR");
    if (!dir.isEmpty())
        QVERIFY(window.grab().save(dir + QLatin1Char('/') + name));
}

} // namespace

class TestComparePanelModel : public QObject {
    Q_OBJECT
private slots:
    void initTestCase() { QStandardPaths::setTestModeEnabled(true); }

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
        // B's sequences carry the chat's tag into its snapshots: its map colours them as the chat.
        const auto bTaggedChat = [compare] {
            const SnapshotReplay& steps = compare->mapB()->replay();
            for (std::size_t i = 0; i < steps.size(); ++i)
                for (const SeqSnapshot& s : steps.at(i)->seqs)
                    if (s.client_tag == 1)
                        return true;
            return false;
        };
        QTRY_VERIFY_WITH_TIMEOUT(!compare->replyText(1).isEmpty() && bTaggedChat(), kWaitMs);
        QTRY_VERIFY_WITH_TIMEOUT(compare->cell(ComparePanel::TtftP50, 1) != kNoData, kWaitMs);
        QVERIFY(!compare->replyText(0).isEmpty());
        QVERIFY(compare->cell(ComparePanel::TtftP50, 2) != kNoData);
        // The turn ended in both engines, counted by each as completed.
        QTRY_COMPARE_WITH_TIMEOUT(compare->cell(ComparePanel::RequestsCompleted, 1), QStringLiteral("1"), kWaitMs);
        QTRY_COMPARE_WITH_TIMEOUT(compare->cell(ComparePanel::RequestsCompleted, 0), QStringLiteral("1"), kWaitMs);
        QCOMPARE(compare->cell(ComparePanel::RequestsAborted, 1), QStringLiteral("0"));
        QCOMPARE(compare->cell(ComparePanel::RequestsFailed, 1), QStringLiteral("0"));
        // B − A says which is better: TTFT lower is better, so a positive
        // difference is B worse (▼), a negative one B better (▲).
        const QString ttft = compare->cell(ComparePanel::TtftP50, 2);
        const double difference = ttft.section(QLatin1Char(' '), 0, 0).toDouble();
        if (difference != 0.0)
            QVERIFY2(ttft.endsWith(difference > 0 ? QStringLiteral("\u25bc") : QStringLiteral("\u25b2")), qPrintable(ttft));
        // B's replay keeps the steps it did not publish, as A's does.
        QTRY_VERIFY_WITH_TIMEOUT(compare->mapB()->replay().size() > static_cast<std::size_t>(shownB.count()), kWaitMs);
        QCoreApplication::processEvents();
        verifyNothingTruncated(*compare->findChild<QTableWidget*>(QStringLiteral("compareTable")));
        saveScreenshot(window, QStringLiteral("compare-1024x700.png"));

        // Apply on B replaces its engine, and says so.
        QSignalSpy appliedB(compare->engineB()->controller(), &EngineController::configApplied);
        compare->findChild<QWidget*>(QStringLiteral("compareSettings"))
            ->findChild<QPushButton*>(QStringLiteral("applyConfig"))
            ->click();
        QVERIFY(appliedB.wait(kWaitMs));

        compare->findChild<QPushButton*>(QStringLiteral("stopCompare"))->click();
        QVERIFY(!compare->isRunning());
        QVERIFY(!compare->mapB()->map()->snapshot());
        QVERIFY(compare->mapB()->figures().contains(QStringLiteral("B is not running"))); // not "No model loaded"
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
        // The panel redraws at most every 250 ms: until it shows the
        // latest costs, and its plots have no replot waiting.
        QTRY_VERIFY_WITH_TIMEOUT(showsLatestCosts(*window.kvQuant()), kWaitMs);
        for (const char* name : {"bytesPerTokenPlot", "kvNowPlot"}) {
            const auto* plot = quant->findChild<QWidget*>(QLatin1String(name));
            QVERIFY(plot);
            QVERIFY2(plot->height() >= 150, qPrintable(QString::number(plot->height())));
        }
        saveScreenshot(window, QStringLiteral("kv-quant-1024x700.png"));
    }
};

QTEST_MAIN(TestComparePanelModel)
#include "test_compare_panel_model.moc"
