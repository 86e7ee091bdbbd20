#pragma once

#include <memory>
#include <optional>

#include <QElapsedTimer>
#include <QImage>
#include <QTimer>
#include <QWidget>

#include "engine/kv/kv_ids.h"
#include "engine/kv/pool_snapshot.h"
#include "ui/blockmap/block_lanes.h"
#include "ui/blockmap/block_look.h"
#include "ui/blockmap/block_map_layout.h"
#include "ui/blockmap/sequence_palette.h"
#include "ui/blockmap/window_fade.h"

namespace kvscope::ui {

class CellColors;

// "1 block", "12 blocks": a count as the map's lane titles and figures word it.
QString counted(std::size_t n, const char* one, const char* many);

// Paints every block of one PoolSnapshot as a cell (see block_look.h for the
// look of each state) and explains a block in a tooltip on hover. It shows
// only what it was given: no engine access, no state beyond the snapshot
// and how it is zoomed.
//
// Any pool size reads: while blocks fit at 4 px each, one cell per block;
// beyond that each cell holds a run of blocks and shows its mix
// (block_map_layout.h, block_look.h), and its tooltip says the run. Zoom
// (wheel, +/-, 0 for "fit", or the zoom bar) goes down to single blocks;
// what no longer fits is panned to by dragging, with the arrow and page
// keys, or on the minimap of the whole pool that appears at the right while
// the map does not show all of it. A new pool size goes back to "fit".
//
// A pool with KV cache groups (a model with sliding-window layers) is drawn
// in lanes (block_lanes.h): one per kind of attention layer, titled with
// the kind and its figures, then the free pool. Blocks a sliding window let
// go of are marked (block_look.h) for WindowFade::kSeconds after they were
// freed. A pool of one group is the plain grid.
//
// Cells are rendered into an image by writing pixels, once per snapshot,
// size, zoom or scroll change (and while a window mark fades), touching
// each block once, so 200,000 blocks repaint within a frame.
class BlockMapWidget : public QWidget {
    Q_OBJECT
public:
    using Scale = BlockMapLayout::Scale;
    using Run = BlockMapLayout::Run;
    static constexpr int kMinimapWidth = 14;

    explicit BlockMapWidget(QWidget* parent = nullptr);

    void setSnapshot(std::shared_ptr<const PoolSnapshot> snapshot);
    void setSequencePalette(SequencePalette palette);
    // Written in the middle while there is no snapshot ("No pool" by default).
    void setEmptyText(const QString& text);
    // Which blocks the window freed when, seen at `atS` on the snapshots'
    // clock. advancing: the picture is live, so the marks keep fading as
    // wall time passes after `atS` (until a newer fade comes); else it
    // stays as at `atS` (a replayed step).
    void setWindowFade(WindowFade fade, double atS, bool advancing);
    const std::shared_ptr<const PoolSnapshot>& snapshot() const { return snapshot_; }
    const std::vector<BlockLane>& lanes() const { return lanes_; } // empty: the plain grid
    QString laneTitle(std::size_t lane) const;
    QRect laneTitleRect(std::size_t lane) const { return cells().titleRect(lane); }
    // How strongly block's window mark shows now (0..1).
    double windowMark(BlockId block) const;

    // The cells as laid out now (zoomed and scrolled).
    const BlockMapLayout& cells() const;
    std::size_t zoomStep() const { return zoomStep_; } // 0: the whole pool fits
    bool canZoomIn() const;
    // "1 cell = 32 blocks · blocks 0–12,287 of 200,000 in view"
    QString scaleText() const;
    // The strip at the right framing what is in view; null while all shows.
    QRect minimapRect() const;

    // A cell's blocks (BlockIds), ascending; empty on a gap or outside.
    std::vector<BlockId> blocksAt(QPoint point) const;
    // The block under point when its cell holds one block.
    std::optional<BlockId> blockAt(QPoint point) const;
    QRect blockRect(BlockId block) const; // the cell holding it
    QString toolTipFor(BlockId block) const;
    QString toolTipAt(QPoint point) const; // the block's or the run's
    QString runToolTip(const std::vector<BlockId>& blocks) const;

    QSize sizeHint() const override;
    QSize minimumSizeHint() const override;

public slots:
    void zoomIn();
    void zoomOut();
    void zoomToFit();
    // Scrolls so that content y `scroll` is at the top (clamped).
    void scrollTo(int scroll);

signals:
    void viewChanged(); // zoom or scroll moved: the zoom bar's figures

protected:
    bool event(QEvent* event) override;
    void paintEvent(QPaintEvent* event) override;
    void resizeEvent(QResizeEvent* event) override;
    void mousePressEvent(QMouseEvent* event) override;
    void mouseMoveEvent(QMouseEvent* event) override;
    void mouseReleaseEvent(QMouseEvent* event) override;
    void wheelEvent(QWheelEvent* event) override;
    void keyPressEvent(QKeyEvent* event) override;
    void leaveEvent(QEvent* event) override;

private:
    std::size_t blockCount() const { return snapshot_ ? snapshot_->blocks.size() : 0; }
    BlockId blockOfSlot(std::size_t slot) const { return lanes_.empty() ? static_cast<BlockId>(slot) : order_[slot]; }
    std::vector<std::size_t> laneSizes() const;
    BlockMapLayout layoutFor(QSize area, std::size_t step, int scroll) const;
    void relayout();
    std::optional<std::size_t> slotAt(QPoint point) const;
    void zoomTo(std::size_t step, QPoint anchor);
    void scrollToSlot(std::size_t slot, int y);
    void invalidate();
    void renderCells();
    void renderMinimap(CellPainter& cellPainter, CellColors& colors, double now);
    void setHovered(std::optional<std::size_t> cell);
    void paintNotes(QPainter& painter);
    void paintLaneTitles(QPainter& painter);
    void paintMinimapFrame(QPainter& painter);
    double fadeNow() const;
    void fadeTick();
    QString groupLine(const BlockInfo& info) const;

    std::shared_ptr<const PoolSnapshot> snapshot_;
    SequencePalette palette_;
    std::vector<BlockLane> lanes_;
    std::vector<BlockId> order_;     // slot -> block: the lanes' blocks one lane after another
    std::vector<std::size_t> slots_; // block -> slot
    WindowFade fade_;
    double fadeAtS_ = 0;
    bool fadeAdvancing_ = false;
    QElapsedTimer fadeClock_; // wall time since fadeAtS_, while advancing
    QTimer fadeTimer_;        // repaints while a mark fades, live
    std::size_t zoomStep_ = 0; // into BlockMapLayout::zoomSteps of the fitted scale
    int scroll_ = 0;
    int wheelDelta_ = 0;       // a wheel's eighths of a degree not yet turned into zoom steps
    std::optional<std::pair<QPoint, std::size_t>> wheelAnchor_; // the cursor and its slot, while the wheel turns
    std::optional<QPoint> dragFrom_;
    int dragScroll_ = 0;
    bool draggingMinimap_ = false;
    mutable std::optional<BlockMapLayout> cells_; // recomputed on demand: hit tests may come before any paint
    QImage image_;     // the rendered cells, valid while !dirty_
    bool dirty_ = true;
    std::optional<std::size_t> hovered_; // a cell
    QString emptyText_;
};

} // namespace kvscope::ui
