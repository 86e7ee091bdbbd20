// The main window's layout at the sizes people use, 1024x700 to 2560x1440,
// in each theme, offscreen: before a model the start page is alone and none
// of its text is squeezed; with stories260K loaded no label, button or dock
// tab shows less than its text, and every dock and plot keeps a usable
// size; the dashboards get their share of the window back after it shrank
// and grew again.
#include <QAbstractScrollArea>
#include <QAction>
#include <QApplication>
#include <QDockWidget>
#include <QLabel>
#include <QMouseEvent>
#include <QPushButton>
#include <QScrollArea>
#include <QStandardPaths>
#include <QStyle>
#include <QTabBar>
#include <QtTest>

#include "support/test_models.h"
#include "ui/shell/main_window.h"
#include "ui/shell/start_page.h"
#include "ui/shell/theme.h"

using namespace kvscope::ui;

namespace {

constexpr int kWaitMs = 60'000;
// Below these a dock or a plot shows a strip, not a picture.
constexpr int kMinDockHeight = 150;
constexpr int kMinDockWidth = 200;
constexpr int kMinPlotHeight = 100;

const QSize kSizes[] = {{1024, 700}, {1600, 1000}, {2560, 1440}};

// Shown, and not scrolled wholly out of its scroll area.
bool onScreen(const QWidget& w) { return w.isVisible() && !w.visibleRegion().isEmpty(); }

// "QLabel 'Requests' in workloadDock": enough to find the widget.
QString describe(const QWidget& w, const QString& text) {
    QString where;
    for (const QWidget* p = w.parentWidget(); p; p = p->parentWidget())
        if (qobject_cast<const QDockWidget*>(p) || p->objectName() == QStringLiteral("startColumn")) {
            where = p->objectName();
            break;
        }
    return QStringLiteral("%1 '%2' in %3 (%4x%5)")
        .arg(QString::fromLatin1(w.metaObject()->className()), text.left(40), where.isEmpty() ? QStringLiteral("window") : where)
        .arg(w.width())
        .arg(w.height());
}

// Taller than the scroll area it is in: it can only be read by scrolling.
bool longerThanItsScrollArea(const QWidget& w) {
    for (const QWidget* p = w.parentWidget(); p; p = p->parentWidget())
        if (const auto* area = qobject_cast<const QAbstractScrollArea*>(p))
            return w.height() > area->viewport()->height();
    return false;
}

// In a scroll area whose content is larger than its view: a widget partly
// out of view is a scroll away, not clipped.
bool inAScrollingArea(const QWidget& w) {
    for (const QWidget* p = w.parentWidget(); p; p = p->parentWidget())
        if (const auto* area = qobject_cast<const QScrollArea*>(p); area && area->widget()) {
            const QSize content = area->widget()->size();
            const QSize view = area->viewport()->size();
            return content.height() > view.height() || content.width() > view.width();
        }
    return false;
}

// Part of the widget is beyond the edge of a parent, though it would fit
// (and no scroll bar brings it into view).
bool cutByParent(const QWidget& w) {
    return w.visibleRegion().boundingRect() != w.rect() && !longerThanItsScrollArea(w) && !inAScrollingArea(w);
}

// Text a label has less room for than it needs: a wrapped label shorter
// than its text at its width, another narrower or shorter than its text.
QStringList clippedLabels(const QWidget& root) {
    QStringList problems;
    for (const QLabel* label : root.findChildren<QLabel*>()) {
        if (!onScreen(*label) || label->text().isEmpty())
            continue;
        const QSize hint = label->minimumSizeHint();
        const bool squeezed = label->wordWrap() ? label->heightForWidth(label->width()) > label->height()
                                                : hint.width() > label->width() || hint.height() > label->height();
        if (squeezed || cutByParent(*label))
            problems << describe(*label, label->text());
    }
    return problems;
}

QStringList clippedButtons(const QWidget& root) {
    QStringList problems;
    for (const QPushButton* button : root.findChildren<QPushButton*>()) {
        if (!onScreen(*button))
            continue;
        const QSize hint = button->minimumSizeHint();
        if (hint.width() > button->width() || hint.height() > button->height() || cutByParent(*button))
            problems << describe(*button, button->text());
    }
    return problems;
}

// The tabs of tabbed docks (the main window's own tab bars): an elided
// title ("Engine settin…") is clipped text.
QStringList elidedDockTabs(const QMainWindow& window) {
    QStringList problems;
    for (const QTabBar* bar : window.findChildren<QTabBar*>(Qt::FindDirectChildrenOnly)) {
        if (!onScreen(*bar))
            continue;
        const int padding = bar->style()->pixelMetric(QStyle::PM_TabBarTabHSpace, nullptr, bar);
        for (int i = 0; i < bar->count(); ++i)
            if (bar->tabRect(i).width() < bar->fontMetrics().horizontalAdvance(bar->tabText(i)) + padding)
                problems << describe(*bar, bar->tabText(i));
    }
    return problems;
}

QStringList docksTooSmall(const QMainWindow& window) {
    QStringList problems;
    for (const QDockWidget* dock : window.findChildren<QDockWidget*>())
        if (onScreen(*dock) && (dock->height() < kMinDockHeight || dock->width() < kMinDockWidth))
            problems << describe(*dock, dock->windowTitle());
    return problems;
}

QStringList plotsTooShort(const QMainWindow& window) {
    QStringList problems;
    for (const QWidget* plot : window.findChildren<QWidget*>())
        if (plot->inherits("QCustomPlot") && onScreen(*plot) &&
            plot->visibleRegion().boundingRect().height() < kMinPlotHeight)
            problems << describe(*plot, QStringLiteral("plot"));
    return problems;
}

QStringList visibleDocks(const QMainWindow& window) {
    QStringList docks;
    for (const QDockWidget* dock : window.findChildren<QDockWidget*>())
        if (dock->isVisible())
            docks << dock->objectName();
    return docks;
}

// A mouse event straight to the window with the buttons held as given
// (QTest's mouseMove carries none).
void mouse(QWidget& window, QEvent::Type type, QPoint at, Qt::MouseButtons held) {
    QMouseEvent event(type, at, window.mapToGlobal(at), Qt::LeftButton, held, Qt::NoModifier);
    QApplication::sendEvent(&window, &event);
}

// Lets queued layout work (dock sizes, replots) run.
void settle() { QTest::qWait(100); }

void showAt(MainWindow& window, QSize size) {
    window.resize(size);
    window.show();
    settle();
}

// Shown at `size` with stories260K loaded.
void loadAt(MainWindow& window, QSize size, const QString& model) {
    showAt(window, size);
    QSignalSpy ready(&window, &MainWindow::modelReady);
    window.openModel(ModelSource::file(model));
    QVERIFY(ready.wait(kWaitMs));
    settle();
}

const QDockWidget* dock(const QMainWindow& window, const char* name) {
    return window.findChild<QDockWidget*>(QString::fromLatin1(name));
}

} // namespace

class TestLayout : public QObject {
    Q_OBJECT

private slots:
    void initTestCase() { QStandardPaths::setTestModeEnabled(true); } // no saved layout, no saved theme

    void cleanup() { applyTheme(Theme::System); }

    void sizesAndThemes_data() {
        QTest::addColumn<QSize>("size");
        QTest::addColumn<int>("theme");
        for (QSize size : kSizes)
            for (Theme theme : {Theme::Light, Theme::Dark})
                QTest::addRow("%dx%d %s", size.width(), size.height(), qPrintable(themeName(theme)))
                    << size << static_cast<int>(theme);
    }

    void startPageIsAloneAndUnclipped_data() { sizesAndThemes_data(); }
    void startPageIsAloneAndUnclipped() {
        QFETCH(QSize, size);
        QFETCH(int, theme);
        applyTheme(static_cast<Theme>(theme));
        MainWindow window;
        showAt(window, size);
        QVERIFY2(visibleDocks(window).isEmpty(), qPrintable(visibleDocks(window).join(QStringLiteral(", "))));
        // The start page scrolls in a short window: what is on screen is whole.
        const QStringList clipped = clippedLabels(*window.startPage()) + clippedButtons(*window.startPage());
        QVERIFY2(clipped.isEmpty(), qPrintable(clipped.join(QStringLiteral("\n"))));
    }

    void chatWithAModelFits_data() { sizesAndThemes_data(); }
    void chatWithAModelFits() {
        KVSCOPE_REQUIRE_MODEL(model, "stories260K-f32.gguf");
        QFETCH(QSize, size);
        QFETCH(int, theme);
        applyTheme(static_cast<Theme>(theme));
        MainWindow window;
        loadAt(window, size, model);
        QVERIFY(!QTest::currentTestFailed());
        QVERIFY(!visibleDocks(window).isEmpty());
        QStringList problems = elidedDockTabs(window) + clippedLabels(*dock(window, "modelDock"));
        for (const QString& name : MainWindow::dockNames()) {
            QVERIFY(window.raiseDock(name));
            settle();
            problems += docksTooSmall(window) + clippedButtons(window) + plotsTooShort(window) + clippedLabels(window);
        }
        problems.removeDuplicates();
        QVERIFY2(problems.isEmpty(), qPrintable(problems.join(QStringLiteral("\n"))));
    }

    // View > Theme > Dark repaints the plots in the palette's colours and is
    // kept for the next run.
    void themeMenuRepaintsThePlotsAndIsKept() {
        MainWindow window;
        showAt(window, {1600, 1000});
        auto* dark = window.findChild<QAction*>(QStringLiteral("theme_dark"));
        QVERIFY(dark);
        dark->trigger();
        settle();
        QCOMPARE(savedTheme(), Theme::Dark);
        const QColor base = QApplication::palette().color(QPalette::Base);
        QVERIFY(base.lightness() < 100);
        window.raiseDock(QStringLiteral("throughput"));
        settle();
        const auto plots = dock(window, "throughputDock")->findChildren<QWidget*>();
        const auto plot = std::find_if(plots.begin(), plots.end(), [](QWidget* w) { return w->inherits("QCustomPlot"); });
        QVERIFY(plot != plots.end());
        QCOMPARE((*plot)->grab().toImage().pixelColor(1, 1), base);
        window.findChild<QAction*>(QStringLiteral("theme_system"))->trigger();
        QCOMPARE(savedTheme(), Theme::System);
    }

    // Qt gives a growing window's room to the central widget alone: without
    // the docks' shares the dashboards would stay the strip the small
    // window squeezed them to.
    void dashboardsGrowBackWithTheWindow() {
        KVSCOPE_REQUIRE_MODEL(model, "stories260K-f32.gguf");
        MainWindow window;
        loadAt(window, {2560, 1440}, model);
        QVERIFY(!QTest::currentTestFailed());
        const QDockWidget* dashboards = dock(window, "fragmentationDock");
        const int before = dashboards->height();
        showAt(window, {1024, 700});
        showAt(window, {2560, 1440});
        QVERIFY2(dashboards->height() >= 0.9 * before,
                 qPrintable(QStringLiteral("%1 px after growing back, %2 px before").arg(dashboards->height()).arg(before)));
    }

    // A dragged separator sets the dashboards' share: the window's next
    // resize keeps what the user chose, not the default.
    void aDraggedShareIsKept() {
        KVSCOPE_REQUIRE_MODEL(model, "stories260K-f32.gguf");
        MainWindow window;
        loadAt(window, {1600, 1000}, model);
        QVERIFY(!QTest::currentTestFailed());
        const QDockWidget* dashboards = dock(window, "fragmentationDock");
        const int before = dashboards->height();
        // The separator: the gap just above the dock, on no child widget.
        const QPoint separator(window.width() / 2, dashboards->geometry().top() - 2);
        QVERIFY(!window.childAt(separator));
        const QPoint end = separator + QPoint(0, 100);
        mouse(window, QEvent::MouseButtonPress, separator, Qt::LeftButton);
        mouse(window, QEvent::MouseMove, end, Qt::LeftButton);
        settle(); // QMainWindow moves separators on a timer
        mouse(window, QEvent::MouseButtonRelease, end, Qt::NoButton);
        settle();
        const int dragged = dashboards->height();
        QVERIFY2(dragged < before - 50, qPrintable(QStringLiteral("%1 px before the drag, %2 after").arg(before).arg(dragged)));
        showAt(window, {1024, 700});
        showAt(window, {1600, 1000});
        QVERIFY2(std::abs(dashboards->height() - dragged) <= 4,
                 qPrintable(QStringLiteral("%1 px after shrinking and growing, %2 dragged").arg(dashboards->height()).arg(dragged)));
    }
};

QTEST_MAIN(TestLayout)
#include "test_layout.moc"
