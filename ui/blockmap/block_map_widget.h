#pragma once

#include <memory>
#include <optional>

#include <QImage>
#include <QWidget>

#include "engine/kv/kv_ids.h"
#include "engine/kv/pool_snapshot.h"
#include "ui/blockmap/block_map_layout.h"
#include "ui/blockmap/sequence_palette.h"

namespace kvscope::ui {

// Paints every block of one PoolSnapshot as a cell (see block_look.h for the
// look of each state) and explains a block in a tooltip on hover. It shows
// only what it was given: no engine access, no state beyond the snapshot.
//
// Cells are rendered into an image by writing pixels, once per snapshot or
// size change, so even 65,536 blocks repaint in a few milliseconds.
class BlockMapWidget : public QWidget {
    Q_OBJECT
public:
    explicit BlockMapWidget(QWidget* parent = nullptr);

    void setSnapshot(std::shared_ptr<const PoolSnapshot> snapshot);
    void setSequencePalette(SequencePalette palette);
    const std::shared_ptr<const PoolSnapshot>& snapshot() const { return snapshot_; }

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

    std::shared_ptr<const PoolSnapshot> snapshot_;
    SequencePalette palette_;
    mutable BlockMapLayout cells_; // for cellsSize_, recomputed on demand: hit tests may come before any paint
    mutable QSize cellsSize_;
    QImage image_;     // the rendered cells, valid while !dirty_
    bool dirty_ = true;
    std::optional<BlockId> hovered_;
};

} // namespace kvscope::ui
