#pragma once

#include <cstddef>
#include <optional>

#include <QPoint>
#include <QRect>
#include <QSize>

namespace kvscope::ui {

// Where each block's cell sits on a block map: a grid of square cells, row
// by row in BlockId order, as large as the area allows (up to kMaxPitch px)
// and down to 1 px per block for very large pools.
struct BlockMapLayout {
    static constexpr int kMaxPitch = 72;
    static constexpr int kMargin = 2;

    int pitch = 0;   // cell + gap
    int cell = 0;    // side of a cell's square
    int columns = 0;
    int rows = 0;
    std::size_t blocks = 0;  // in the pool
    std::size_t visible = 0; // that fit in the area (== blocks unless it is tiny)

    static BlockMapLayout fit(QSize area, std::size_t blocks);

    QRect cellRect(std::size_t block) const;
    std::optional<std::size_t> blockAt(QPoint point) const; // nullopt on a gap or outside
    // The cells' bounding box, from the first cell's corner (margins excluded).
    QSize gridSize() const {
        const int gap = pitch - cell;
        return columns == 0 ? QSize() : QSize(columns * pitch - gap, rows * pitch - gap);
    }

    // Calls f(block, cell rect) for every visible block in order, stepping
    // through the grid instead of dividing per block (the paint loop).
    template <typename F>
    void forEachCell(F&& f) const {
        int column = 0;
        QRect rect(kMargin, kMargin, cell, cell);
        for (std::size_t block = 0; block < visible; ++block) {
            f(block, rect);
            if (++column < columns) {
                rect.translate(pitch, 0);
            } else {
                column = 0;
                rect.moveTo(kMargin, rect.top() + pitch);
            }
        }
    }
};

} // namespace kvscope::ui
