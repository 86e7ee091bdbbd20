#include "ui/shell/dock_shares.h"

#include <algorithm>
#include <utility>
#include <vector>

#include <QDockWidget>
#include <QMainWindow>
#include <QMouseEvent>
#include <QScrollArea>
#include <QStatusBar>
#include <QStyle>
#include <QTabBar>
#include <QTimer>

namespace kvscope::ui {
namespace {

// A dock gets what its panel needs to show without scrolling, when that is
// more than its share, up to this share of the window: less across than
// down, so that the block map beside the chat keeps room in a narrow window
// (a side dock's panel scrolls sideways instead).
constexpr double kMaxNeededWidthShare = 0.3;
constexpr double kMaxNeededHeightShare = 0.4;

bool isHorizontal(Qt::DockWidgetArea area) {
    return area == Qt::LeftDockWidgetArea || area == Qt::RightDockWidgetArea;
}

// The docks of `area`, docked (not floating) and not closed.
std::vector<QDockWidget*> areaDocks(const QMainWindow& window, Qt::DockWidgetArea area) {
    std::vector<QDockWidget*> docks;
    for (QDockWidget* d : window.findChildren<QDockWidget*>())
        if (!d->isHidden() && !d->isFloating() && window.dockWidgetArea(d) == area)
            docks.push_back(d);
    return docks;
}

// Of those, the ones on screen: of a tab group, the front one (Qt moves the
// others out of sight, visible still).
std::vector<QDockWidget*> frontDocks(const QMainWindow& window, Qt::DockWidgetArea area) {
    std::vector<QDockWidget*> docks = areaDocks(window, area);
    std::erase_if(docks, [](const QDockWidget* d) { return d->visibleRegion().isEmpty(); });
    return docks;
}

// The extent a dock area takes of the window: width for the side areas,
// height for the top and bottom.
int extent(const QWidget& widget, Qt::DockWidgetArea area) {
    return isHorizontal(area) ? widget.width() : widget.height();
}

// What the dock's panel needs across the area's extent to show whole: a
// docked panel in a scroll area says so by its own minimum size.
int neededExtent(const QDockWidget& dock, Qt::DockWidgetArea area) {
    const QWidget* panel = dock.widget();
    if (!panel)
        return 0;
    const int titleBar = std::max(dock.height() - panel->height(), 0); // what the dock adds around its panel
    int chrome = 0;
    if (const auto* scroll = qobject_cast<const QScrollArea*>(panel); scroll && scroll->widget()) {
        panel = scroll->widget();
        chrome = dock.style()->pixelMetric(QStyle::PM_ScrollBarExtent) + 2 * scroll->frameWidth();
    }
    const QSize hint = panel->minimumSizeHint() + QSize(chrome, chrome);
    return isHorizontal(area) ? hint.width() : hint.height() + titleBar;
}

// The area's extent as resizeDocks sets it: from the dock's inner edge to
// the window's edge (menu bar and status bar aside), so a tab group's tab
// bar counts.
int areaExtent(const QMainWindow& window, const QDockWidget& dock, Qt::DockWidgetArea area) {
    const QRect d = dock.geometry();
    const int top = window.menuWidget() ? window.menuWidget()->geometry().bottom() + 1 : 0;
    const QWidget* status = window.findChild<QStatusBar*>(QString(), Qt::FindDirectChildrenOnly);
    const int bottom = status && status->isVisible() ? status->geometry().top() : window.height();
    switch (area) {
    case Qt::LeftDockWidgetArea: return d.right() + 1;
    case Qt::RightDockWidgetArea: return window.width() - d.left();
    case Qt::TopDockWidgetArea: return d.bottom() + 1 - top;
    default: return bottom - d.top();
    }
}

} // namespace

DockShares::DockShares(QMainWindow* window, Shares defaults)
    : QObject(window), window_(window), defaults_(std::move(defaults)) {
    window_->installEventFilter(this);
}

void DockShares::applyNow() {
    Shares shares = chosen_;
    shares.insert(defaults_.begin(), defaults_.end()); // where the user chose none
    for (const auto& [area, share] : shares) {
        const std::vector<QDockWidget*> docks = frontDocks(*window_, area);
        if (docks.empty())
            continue;
        const int size = chosen_.contains(area) ? static_cast<int>(share * extent(*window_, area))
                                                : defaultExtent(area, share);
        // One dock sizes its whole area (docks side by side share its extent;
        // naming each of a tab group makes Qt split the size among them).
        window_->resizeDocks({docks.front()}, {size}, isHorizontal(area) ? Qt::Horizontal : Qt::Vertical);
    }
}

// The width the tab bar of `docks`, tabbed together, needs to show every
// title whole; 0 when they are not tabbed. A narrow panel must not leave
// its tab titles elided ("Engine settin…").
int tabsExtent(const QMainWindow& window, const std::vector<QDockWidget*>& docks) {
    int needed = 0;
    for (const QTabBar* bar : window.findChildren<QTabBar*>(Qt::FindDirectChildrenOnly)) {
        if (!bar->isVisible())
            continue;
        for (int i = 0; i < bar->count(); ++i)
            if (std::any_of(docks.begin(), docks.end(),
                            [&](const QDockWidget* d) { return d->windowTitle() == bar->tabText(i); })) {
                needed = std::max(needed, bar->sizeHint().width());
                break;
            }
    }
    return needed;
}

// The default share, or what the area's panels need when that is more: by
// any of its docks, so that switching tabs keeps the size.
int DockShares::defaultExtent(Qt::DockWidgetArea area, double share) const {
    const int whole = extent(*window_, area);
    const std::vector<QDockWidget*> docks = areaDocks(*window_, area);
    int needed = isHorizontal(area) ? tabsExtent(*window_, docks) : 0;
    for (const QDockWidget* d : docks)
        needed = std::max(needed, neededExtent(*d, area));
    const double most = isHorizontal(area) ? kMaxNeededWidthShare : kMaxNeededHeightShare;
    return std::max(static_cast<int>(share * whole), std::min(needed, static_cast<int>(most * whole)));
}

void DockShares::apply() {
    if (std::exchange(applyQueued_, true))
        return;
    QTimer::singleShot(0, this, [this] {
        applyQueued_ = false;
        applyNow();
    });
}

DockShares::Extents DockShares::dockExtents() const {
    Extents extents;
    for (Qt::DockWidgetArea area :
         {Qt::LeftDockWidgetArea, Qt::RightDockWidgetArea, Qt::TopDockWidgetArea, Qt::BottomDockWidgetArea}) {
        int size = 0;
        for (QDockWidget* d : frontDocks(*window_, area))
            size = std::max(size, areaExtent(*window_, *d, area));
        if (size > 0)
            extents[area] = size;
    }
    return extents;
}

// Only the areas the drag changed: another may be squeezed by a small window
// right now, and its share is what it gets back when the window grows.
void DockShares::recordDraggedShares() {
    for (const auto& [area, size] : dockExtents())
        if (pressExtents_[area] != size && extent(*window_, area) > 0)
            chosen_[area] = static_cast<double>(size) / extent(*window_, area);
}

bool DockShares::eventFilter(QObject* watched, QEvent* event) {
    if (watched != window_)
        return false;
    switch (event->type()) {
    case QEvent::Resize: // the window's layout has just run (before its filters)
        applyNow();
        break;
    case QEvent::MouseButtonPress:
        // A press on the window itself, not on a child: a dock separator
        // (children's unhandled presses reach the window too, at a child).
        separatorDrag_ = !window_->childAt(static_cast<QMouseEvent*>(event)->position().toPoint());
        if (separatorDrag_)
            pressExtents_ = dockExtents();
        break;
    case QEvent::MouseButtonRelease:
        // QMainWindow moves the separator on a timer, and sees the release
        // after this filter: its last move has landed on the next pass.
        if (std::exchange(separatorDrag_, false))
            QTimer::singleShot(0, this, &DockShares::recordDraggedShares);
        break;
    default:
        break;
    }
    return false;
}

} // namespace kvscope::ui
