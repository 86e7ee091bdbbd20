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
#include "ui/blockmap/block_map_layout.h"
#include "ui/blockmap/sequence_palette.h"
#include "ui/blockmap/window_fade.h"

namespace kvscope::ui {

// "1 block", "12 blocks": a count as the map's lane titles and figures word it.
QString counted(std::size_t n, const char* one, const char* many);

// Paints every block of one PoolSnapshot as a cell (see block_look.h for the
// look of each state) and explains a block in a tooltip on hover. It shows
// only what it was given: no engine access, no state beyond the snapshot.
//
// A pool with KV cache groups (a model with sliding-window layers) is drawn
// in lanes (block_lanes.h): one per kind of attention layer, titled with
// the kind and its figures, then the free pool. Blocks a sliding window let
// go of are marked (block_look.h) for WindowFade::kSeconds after they were
// freed. A pool of one group is the plain grid, as it always was.
//
// Cells are rendered into an image by writing pixels, once per snapshot or
// size change (and while a window mark fades), so even 65,536 blocks
// repaint in a few milliseconds.
class BlockMapWidget : public QWidget {
    Q_OBJECT
public:
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

    std::optional<BlockId> blockAt(QPoint point) const;
    QRect blockRect(BlockId block) const;
    QString toolTipFor(BlockId block) const;

    QSize sizeHint() const override;
    QSize minimumSizeHint() const override;

protected:
    bool event(QEvent* event) override;
    void paintEvent(QPaintEvent* event) override;
    void resizeEvent(QResizeEvent* event) override;
    void mouseMoveEvent(QMouseEvent* event) override;
    void leaveEvent(QEvent* event) override;

private:
    std::size_t blockCount() const { return snapshot_ ? snapshot_->blocks.size() : 0; }
    const BlockMapLayout& cells() const;
    void invalidate();
    void renderCells();
    void setHovered(std::optional<BlockId> block);
    void paintNotes(QPainter& painter);
    void paintLaneTitles(QPainter& painter);
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
    mutable BlockMapLayout cells_; // for cellsSize_, recomputed on demand: hit tests may come before any paint
    mutable QSize cellsSize_;
    QImage image_;     // the rendered cells, valid while !dirty_
    bool dirty_ = true;
    std::optional<BlockId> hovered_;
    QString emptyText_;
};

} // namespace kvscope::ui
