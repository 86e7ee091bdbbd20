#pragma once

#include <optional>
#include <vector>

#include <QString>
#include <QWidget>

#include "ui/blockmap/block_look.h"

namespace kvscope::ui {

// Sample cells naming each block state, painted by the same CellPainter as
// the map so the two cannot disagree. Entries flow left to right and wrap
// onto further rows when the legend is narrow (it has a height for each
// width), so none is ever cut off; text and background follow the palette.
class BlockMapLegend : public QWidget {
    Q_OBJECT
public:
    explicit BlockMapLegend(QWidget* parent = nullptr);

    // The "freed by the window" entry, for a pool whose sliding-window
    // groups free what leaves the window; off (the default) for the rest.
    void setShowsWindow(bool shows);
    // The "a cell of N blocks" entry while the map gathers runs of blocks
    // into cells (perCell > 1); none at one block per cell.
    void setRunLength(std::size_t perCell);
    int entryCount() const { return static_cast<int>(entries_.size()); }
    QString entryText(int index) const { return entries_.at(index).text; }
    // Where the entry (swatch and name) sits at the legend's current width.
    QRect entryRect(int index) const { return layoutAt(width()).at(index); }

    bool hasHeightForWidth() const override { return true; }
    int heightForWidth(int width) const override;
    QSize sizeHint() const override;
    QSize minimumSizeHint() const override;

protected:
    bool event(QEvent* event) override; // tooltips
    void resizeEvent(QResizeEvent* event) override;
    void paintEvent(QPaintEvent* event) override;

private:
    struct Entry {
        CellLook look;
        QString text;
        QString tip;
        std::optional<RunLook> run = std::nullopt; // a run's swatch instead of a block's
    };
    void rebuild(); // the entries for the flags below
    int entryWidth(const Entry& entry) const;
    int rowHeight() const;
    std::vector<QRect> layoutAt(int width) const;

    std::vector<Entry> entries_;
    bool showsWindow_ = false;
    std::size_t runLength_ = 1;
};

} // namespace kvscope::ui
