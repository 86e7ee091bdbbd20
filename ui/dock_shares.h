#pragma once

#include <map>

#include <QObject>
#include <QSize>

class QDockWidget;
class QMainWindow;

namespace kvscope::ui {

// Each dock area's share of its main window (the right-hand docks' width as
// a fraction of the window's width, the bottom docks' height of its height),
// kept when the window is resized. QMainWindow gives a growing window's room
// to the central widget alone, so docks squeezed by a small window would stay
// strips after it grows back. A share changes only when the user drags a
// dock separator; the window persists the shares with its layout.
class DockShares : public QObject {
public:
    using Shares = std::map<Qt::DockWidgetArea, double>;

    // Watches `window`'s resizes and separator drags; `shares` are the
    // starting ones (an area without one keeps Qt's sizing).
    DockShares(QMainWindow* window, Shares shares);

    const Shares& shares() const { return shares_; }
    void setShares(Shares shares) { shares_ = std::move(shares); }
    // Sizes the visible docks of each area to its share, on the next pass
    // of the event loop (after the window's own layout has run): once for a
    // burst of calls.
    void apply();

    bool eventFilter(QObject* watched, QEvent* event) override;

private:
    using Extents = std::map<Qt::DockWidgetArea, int>; // pixels across, per area with visible docks

    void applyNow();
    Extents dockExtents() const;
    void recordDraggedShares();

    QMainWindow* window_;
    Shares shares_;
    bool separatorDrag_ = false;
    Extents pressExtents_; // when the separator drag began
    bool applyQueued_ = false;
};

} // namespace kvscope::ui
