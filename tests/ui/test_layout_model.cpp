// The main window's layout with stories260K loaded, at the sizes people use,
// 1024x700 to 2560x1440, in each theme, offscreen: no label, button or dock
// tab shows less than its text, and every dock and plot keeps a usable
// size; the dashboards get their share of the window back after it shrank
// and grew again, or the share a dragged separator gave them. Needs the
// shared models folder (label model); the window without a model is
// test_layout, the checks are layout_checks.h.
#include <QDockWidget>
#include <QStandardPaths>
#include <QtTest>

#include <cstdlib>

#include "layout_checks.h"
#include "support/test_models.h"
#include "ui/shell/main_window.h"
#include "ui/shell/theme.h"

using namespace kvscope::ui;
using namespace kvscope::ui::test;

class TestLayoutModel : public QObject {
    Q_OBJECT

private slots:
    void initTestCase() { QStandardPaths::setTestModeEnabled(true); } // no saved layout, no saved theme

    void cleanup() { applyTheme(Theme::System); }

    void chatWithAModelFits_data() { addSizesAndThemes(); }
    void chatWithAModelFits() {
        KVSCOPE_REQUIRE_MODEL(model, "stories260K-f32.gguf");
        QFETCH(QSize, size);
        QFETCH(int, theme);
        applyTheme(static_cast<Theme>(theme));
        MainWindow window;
        QVERIFY(loadAt(window, size, model));
        QVERIFY(!visibleDocks(window).isEmpty());
        QStringList problems = elidedDockTabs(window) + clippedLabels(*dock(window, "modelDock"));
        for (const QString& name : MainWindow::dockNames()) {
            QVERIFY(window.raiseDock(name));
            QVERIFY(settle(window));
            problems += docksTooSmall(window) + clippedButtons(window) + plotsTooShort(window) + clippedLabels(window) +
                        scrolledSideways(window) + tablesTooShort(window);
        }
        problems.removeDuplicates();
        QVERIFY2(problems.isEmpty(), qPrintable(problems.join(QStringLiteral("\n"))));
    }

    // Qt gives a growing window's room to the central widget alone: without
    // the docks' shares the dashboards would stay the strip the small
    // window squeezed them to.
    void dashboardsGrowBackWithTheWindow() {
        KVSCOPE_REQUIRE_MODEL(model, "stories260K-f32.gguf");
        MainWindow window;
        QVERIFY(loadAt(window, {2560, 1440}, model));
        const QDockWidget* dashboards = dock(window, "fragmentationDock");
        const int before = dashboards->height();
        QVERIFY(showAt(window, {1024, 700}));
        // Squeezed, or growing back would prove nothing.
        QVERIFY2(dashboards->height() < 0.9 * before,
                 qPrintable(QStringLiteral("%1 px at 1024x700, %2 px at 2560x1440").arg(dashboards->height()).arg(before)));
        QVERIFY(showAt(window, {2560, 1440}));
        QVERIFY2(dashboards->height() >= 0.9 * before,
                 qPrintable(QStringLiteral("%1 px after growing back, %2 px before").arg(dashboards->height()).arg(before)));
    }

    // A dragged separator sets the dashboards' share: the window's next
    // resize keeps what the user chose, not the default.
    void aDraggedShareIsKept() {
        KVSCOPE_REQUIRE_MODEL(model, "stories260K-f32.gguf");
        MainWindow window;
        QVERIFY(loadAt(window, {1600, 1000}, model));
        const QDockWidget* dashboards = dock(window, "fragmentationDock");
        const int before = dashboards->height();
        // The separator: the gap just above the dock, on no child widget.
        const QPoint separator(window.width() / 2, dashboards->geometry().top() - 2);
        QVERIFY(!window.childAt(separator));
        const QPoint end = separator + QPoint(0, 100);
        mouse(window, QEvent::MouseButtonPress, separator, Qt::LeftButton);
        mouse(window, QEvent::MouseMove, end, Qt::LeftButton);
        QVERIFY(settle(window)); // QMainWindow moves separators on a timer
        mouse(window, QEvent::MouseButtonRelease, end, Qt::NoButton);
        QVERIFY(settle(window)); // DockShares records the drag on the next pass
        const int dragged = dashboards->height();
        QVERIFY2(dragged < before - 50, qPrintable(QStringLiteral("%1 px before the drag, %2 after").arg(before).arg(dragged)));
        QVERIFY(showAt(window, {1024, 700}));
        QVERIFY(showAt(window, {1600, 1000}));
        QVERIFY2(std::abs(dashboards->height() - dragged) <= 4,
                 qPrintable(QStringLiteral("%1 px after shrinking and growing, %2 dragged").arg(dashboards->height()).arg(dragged)));
    }
};

QTEST_MAIN(TestLayoutModel)
#include "test_layout_model.moc"
