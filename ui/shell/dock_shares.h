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
// strips after it grows back. Until the user drags a dock separator an area
// has its default share, or what its panels need to show whole when that is
// more (up to 30% of the width, 40% of the height); after, the share the drag left it. The
// window persists the chosen shares with its layout.
class DockShares : public QObject {
public:
    using Shares = std::map<Qt::DockWidgetArea, double>;

    // Watches `window`'s resizes and separator drags. An area with no
    // default share keeps Qt's sizing until the user drags it.
    DockShares(QMainWindow* window, Shares defaults);

    // The shares the user chose by dragging.
    const Shares& chosen() const { return chosen_; }
    void setChosen(Shares chosen) { chosen_ = std::move(chosen); }
    // Sizes the visible docks of each area to its share, on the next pass
    // of the event loop (after the window's own layout has run): once for a
    // burst of calls.
    void apply();

    bool eventFilter(QObject* watched, QEvent* event) override;

private:
    using Extents = std::map<Qt::DockWidgetArea, int>; // pixels across, per area with visible docks

    void applyNow();
    int defaultExtent(Qt::DockWidgetArea area, double share) const;
    Extents dockExtents() const;
    void recordDraggedShares();

    QMainWindow* window_;
    Shares defaults_;
    Shares chosen_;
    bool separatorDrag_ = false;
    Extents pressExtents_; // when the separator drag began
    bool applyQueued_ = false;
};

} // namespace kvscope::ui
