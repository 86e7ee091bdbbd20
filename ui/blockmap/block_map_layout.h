#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <vector>

#include <QPoint>
#include <QRect>
#include <QSize>

namespace kvscope::ui {

// Where each block's cell sits on a block map: a grid of square cells, row
// by row, as large as the area allows (up to kMaxPitch px) and down to 1 px
// per block for very large pools.
//
// The cells are numbered by slot, in the order the map lists its blocks
// (BlockId order without lanes). With lanes (block_lanes.h) the slots run
// lane by lane, each lane a title line of titleHeight px then its own rows.
// The pitch depends only on the area, the block count and the number of
// lanes, never on how the blocks are shared between lanes, so cells keep
// their size while blocks move from lane to lane: the lanes' rows are at
// most ceil(blocks / columns) + lanes - 1.
struct BlockMapLayout {
    static constexpr int kMaxPitch = 72;
    static constexpr int kMargin = 2;

    struct Lane {
        std::size_t first = 0; // its first slot
        std::size_t count = 0;
        int titleTop = 0;      // its title line's top (== cellsTop without titles)
        int cellsTop = 0;      // its first row's top
    };

    int pitch = 0;   // cell + gap
    int cell = 0;    // side of a cell's square
    int columns = 0;
    int rows = 0;    // rows of cells, all lanes
    int titleHeight = 0;
    std::size_t blocks = 0;  // in the pool
    std::size_t visible = 0; // the first slots, those that fit in the area (== blocks unless it is tiny)
    std::vector<Lane> lanes; // one, untitled, without lanes

    static BlockMapLayout fit(QSize area, std::size_t blocks);
    // Lanes of the given sizes, each under a title line of titleHeight px.
    static BlockMapLayout fit(QSize area, std::span<const std::size_t> laneSizes, int titleHeight);

    QRect cellRect(std::size_t slot) const;
    std::optional<std::size_t> blockAt(QPoint point) const; // the slot; nullopt on a gap, a title or outside
    // A lane's title line, as wide as the grid.
    QRect titleRect(std::size_t lane) const;
    // The bounding box of cells and titles, from the first one's corner (margins excluded).
    QSize gridSize() const;

    // Calls f(slot, cell rect) for every visible slot in order, stepping
    // through the grid instead of dividing per slot (the paint loop).
    template <typename F>
    void forEachCell(F&& f) const {
        for (const Lane& lane : lanes) {
            const std::size_t end = std::min(lane.first + lane.count, visible);
            int column = 0;
            QRect rect(kMargin, lane.cellsTop, cell, cell);
            for (std::size_t slot = lane.first; slot < end; ++slot) {
                f(slot, rect);
                if (++column < columns) {
                    rect.translate(pitch, 0);
                } else {
                    column = 0;
                    rect.moveTo(kMargin, rect.top() + pitch);
                }
            }
        }
    }

private:
    std::size_t laneOf(std::size_t slot) const;
};

} // namespace kvscope::ui
