// The main window's layout at the sizes people use, 1024x700 to 2560x1440,
// in each theme, offscreen, without a model: the start page is alone and
// none of its text is squeezed; View > Theme repaints the plots and is
// kept. With stories260K loaded (docks, plots, dashboards that grow back)
// it is test_layout_model (label model); the checks are layout_checks.h.
#include <QAction>
#include <QApplication>
#include <QDockWidget>
#include <QStandardPaths>
#include <QtTest>

#include <algorithm>

#include "layout_checks.h"
#include "ui/shell/main_window.h"
#include "ui/shell/start_page.h"
#include "ui/shell/theme.h"

using namespace kvscope::ui;
using namespace kvscope::ui::test;

class TestLayout : public QObject {
    Q_OBJECT

private slots:
    void initTestCase() { QStandardPaths::setTestModeEnabled(true); } // no saved layout, no saved theme

    void cleanup() { applyTheme(Theme::System); }

    void startPageIsAloneAndUnclipped_data() { addSizesAndThemes(); }
    void startPageIsAloneAndUnclipped() {
        QFETCH(QSize, size);
        QFETCH(int, theme);
        applyTheme(static_cast<Theme>(theme));
        MainWindow window;
        QVERIFY(showAt(window, size));
        QVERIFY2(visibleDocks(window).isEmpty(), qPrintable(visibleDocks(window).join(QStringLiteral(", "))));
        // The start page scrolls in a short window: what is on screen is whole.
        const QStringList clipped = clippedLabels(*window.startPage()) + clippedButtons(*window.startPage());
        QVERIFY2(clipped.isEmpty(), qPrintable(clipped.join(QStringLiteral("\n"))));
    }

    // View > Theme > Dark repaints the plots in the palette's colours and is
    // kept for the next run.
    void themeMenuRepaintsThePlotsAndIsKept() {
        MainWindow window;
        QVERIFY(showAt(window, {1600, 1000}));
        auto* dark = window.findChild<QAction*>(QStringLiteral("theme_dark"));
        QVERIFY(dark);
        dark->trigger();
        QVERIFY(settle(window));
        QCOMPARE(savedTheme(), Theme::Dark);
        const QColor base = QApplication::palette().color(QPalette::Base);
        QVERIFY(base.lightness() < 100);
        QVERIFY(window.raiseDock(QStringLiteral("throughput")));
        QVERIFY(settle(window));
        const auto plots = dock(window, "throughputDock")->findChildren<QWidget*>();
        const auto plot = std::find_if(plots.begin(), plots.end(), [](QWidget* w) { return w->inherits("QCustomPlot"); });
        QVERIFY(plot != plots.end());
        // Its replot may wait behind the plots' cooldown (dashboard_plot.cpp).
        QTRY_COMPARE_WITH_TIMEOUT((*plot)->grab().toImage().pixelColor(1, 1), base, kWaitMs);
        window.findChild<QAction*>(QStringLiteral("theme_system"))->trigger();
        QCOMPARE(savedTheme(), Theme::System);
    }
};

QTEST_MAIN(TestLayout)
#include "test_layout.moc"
