// tests/ui: what the layout tests check in a main window (test_layout,
// test_layout_model): labels, buttons and dock tabs that show less than
// their text, docks and plots squeezed to a strip, and a wait until the
// window's layout has settled.
#pragma once

#include <QAbstractScrollArea>
#include <algorithm>
#include <QApplication>
#include <QDockWidget>
#include <QLabel>
#include <QMainWindow>
#include <QMouseEvent>
#include <QPushButton>
#include <QScrollArea>
#include <QSignalSpy>
#include <QStyle>
#include <QTabBar>
#include <QTableView>
#include <QHeaderView>
#include <QtTest>

#include "support/wait.h"
#include "ui/shell/main_window.h"
#include "ui/shell/theme.h"

namespace kvscope::ui::test {

inline constexpr int kWaitMs = static_cast<int>(kvscope::test::kPatience.count()); // a deadlock guard
// Below these a dock or a plot shows a strip, not a picture.
inline constexpr int kMinDockHeight = 150;
inline constexpr int kMinDockWidth = 200;
inline constexpr int kMinPlotHeight = 100;

inline const QSize kSizes[] = {{1024, 700}, {1600, 1000}, {2560, 1440}};

// The data rows both layout tests run: every size in both themes
// (columns "size" and "theme", the Theme as an int).
inline void addSizesAndThemes() {
    QTest::addColumn<QSize>("size");
    QTest::addColumn<int>("theme");
    for (QSize size : kSizes)
        for (Theme theme : {Theme::Light, Theme::Dark})
            QTest::addRow("%dx%d %s", size.width(), size.height(), qPrintable(themeName(theme)))
                << size << static_cast<int>(theme);
}

// Shown, and not scrolled wholly out of its scroll area.
inline bool onScreen(const QWidget& w) { return w.isVisible() && !w.visibleRegion().isEmpty(); }

// "QLabel 'Requests' in workloadDock": enough to find the widget.
inline QString describe(const QWidget& w, const QString& text) {
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
inline bool longerThanItsScrollArea(const QWidget& w) {
    for (const QWidget* p = w.parentWidget(); p; p = p->parentWidget())
        if (const auto* area = qobject_cast<const QAbstractScrollArea*>(p))
            return w.height() > area->viewport()->height();
    return false;
}

// In a scroll area whose content is larger than its view: a widget partly
// out of view is a scroll away, not clipped.
inline bool inAScrollingArea(const QWidget& w) {
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
inline bool cutByParent(const QWidget& w) {
    return w.visibleRegion().boundingRect() != w.rect() && !longerThanItsScrollArea(w) && !inAScrollingArea(w);
}

// Text a label has less room for than it needs: a wrapped label shorter
// than its text at its width, another narrower or shorter than its text.
inline QStringList clippedLabels(const QWidget& root) {
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

inline QStringList clippedButtons(const QWidget& root) {
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
inline QStringList elidedDockTabs(const QMainWindow& window) {
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

inline QStringList docksTooSmall(const QMainWindow& window) {
    QStringList problems;
    for (const QDockWidget* dock : window.findChildren<QDockWidget*>())
        if (onScreen(*dock) && (dock->height() < kMinDockHeight || dock->width() < kMinDockWidth))
            problems << describe(*dock, dock->windowTitle());
    return problems;
}

inline QStringList plotsTooShort(const QMainWindow& window) {
    QStringList problems;
    for (const QWidget* plot : window.findChildren<QWidget*>())
        if (plot->inherits("QCustomPlot") && onScreen(*plot) &&
            plot->visibleRegion().boundingRect().height() < kMinPlotHeight)
            problems << describe(*plot, QStringLiteral("plot"));
    return problems;
}

// A scroll area on screen whose content is wider than its view: a control
// there is only reached by scrolling sideways (a dock's settings form at
// 1024x700). Tables and text views scroll their own content and are left
// to tablesTooShort.
inline QStringList scrolledSideways(const QWidget& root) {
    QStringList problems;
    for (const QScrollArea* area : root.findChildren<QScrollArea*>())
        if (onScreen(*area) && area->widget() && area->widget()->width() > area->viewport()->width())
            problems << describe(*area, QStringLiteral("scrolls sideways: %1 px of content in %2 px")
                                            .arg(area->widget()->width())
                                            .arg(area->viewport()->width()));
    return problems;
}

// A table on screen with rows to show but room for fewer than three of
// them (a KV-quant table showing its header alone). Its own height counts,
// not what is in view: a page that scrolls down to it is fine.
inline QStringList tablesTooShort(const QWidget& root) {
    constexpr int kRows = 3;
    QStringList problems;
    for (const QTableView* table : root.findChildren<QTableView*>()) {
        if (!onScreen(*table) || !table->model() || table->model()->rowCount() == 0)
            continue;
        const int wanted = std::min(kRows, table->model()->rowCount());
        const int row = std::max(1, table->verticalHeader()->defaultSectionSize());
        if (table->viewport()->height() < wanted * row)
            problems << describe(*table, QStringLiteral("table shows fewer than %1 rows").arg(wanted));
    }
    return problems;
}

inline QStringList visibleDocks(const QMainWindow& window) {
    QStringList docks;
    for (const QDockWidget* dock : window.findChildren<QDockWidget*>())
        if (dock->isVisible())
            docks << dock->objectName();
    return docks;
}

// A mouse event straight to the window with the buttons held as given
// (QTest's mouseMove carries none).
inline void mouse(QWidget& window, QEvent::Type type, QPoint at, Qt::MouseButtons held) {
    QMouseEvent event(type, at, window.mapToGlobal(at), Qt::LeftButton, held, Qt::NoModifier);
    QApplication::sendEvent(&window, &event);
}

// Every widget's geometry and visibility in `root`, as one string: what
// its layout decided.
inline QString layoutOf(const QWidget& root) {
    QString text;
    const auto put = [&text](const QWidget& w) {
        const QRect g = w.geometry();
        text += QStringLiteral("%1,%2,%3x%4%5;")
                    .arg(g.x())
                    .arg(g.y())
                    .arg(g.width())
                    .arg(g.height())
                    .arg(w.isVisible() ? QLatin1Char('+') : QLatin1Char('-'));
    };
    put(root);
    for (const QWidget* w : root.findChildren<QWidget*>())
        put(*w);
    return text;
}

// Until the window is exposed and its layout has settled: the queued
// layout work (posted layout requests, DockShares' queued resize,
// QMainWindow's separator timer, each due at once) has run, and two passes
// of the event loop in a row moved no widget. A condition, not a time
// (tests/support/wait.h); false when it never settles.
inline bool settle(QWidget& window) {
    if (!QTest::qWaitForWindowExposed(&window))
        return false;
    QString last;
    int unchanged = 0;
    return kvscope::test::wait_until([&] {
        QString now = layoutOf(window);
        unchanged = now == last ? unchanged + 1 : 0;
        last = std::move(now);
        return unchanged >= 2;
    });
}

// Shown at `size`, its layout settled.
inline bool showAt(QWidget& window, QSize size) {
    window.resize(size);
    window.show();
    return settle(window);
}

// Shown at `size` with stories260K loaded, its layout settled.
inline bool loadAt(MainWindow& window, QSize size, const QString& model) {
    if (!showAt(window, size))
        return false;
    QSignalSpy ready(&window, &MainWindow::modelReady);
    window.openModel(ModelSource::file(model));
    return ready.wait(kWaitMs) && settle(window);
}

inline const QDockWidget* dock(const QMainWindow& window, const char* name) {
    return window.findChild<QDockWidget*>(QString::fromLatin1(name));
}

} // namespace kvscope::ui::test
