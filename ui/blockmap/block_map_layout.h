#pragma once

#include <algorithm>
#include <cstddef>
#include <optional>
#include <span>
#include <vector>

#include <QPoint>
#include <QRect>
#include <QSize>

namespace kvscope::ui {

// Where each block's cell sits on a block map: a grid of square cells, row
// by row, scrolled vertically by `scroll` px.
//
// A cell is readable from 4 px; a pool too large for that many pixels gets
// cells that each hold a *run* of `perCell` consecutive slots (block_look.h
// paints a run's mix as a stacked fill), so a map of 200,000 blocks shows
// all of them at a readable size rather than a mesh of 1-px dots. Zooming in
// (zoomSteps) halves the run until cells hold one block, then enlarges them;
// what no longer fits is scrolled to.
//
// The slots are numbered in the order the map lists its blocks (BlockId
// order without lanes). With lanes (block_lanes.h) the slots run lane by
// lane, each lane a title line of titleHeight px then its own rows; a run
// never crosses a lane. The fitted scale depends only on the area, the block
// count and the number of lanes, never on how blocks are shared between
// lanes, so cells keep their size while blocks move from lane to lane.
//
// Cells are numbered too: lane by lane, run by run. Coordinates are the
// widget's (already scrolled).
struct BlockMapLayout {
    static constexpr int kMaxPitch = 72;
    static constexpr int kMinPitch = 5; // one block: a 4 px cell and a 1 px gap
    static constexpr int kRunPitch = 7; // a run of blocks: 6 px, room for its stacked mix
    static constexpr int kMargin = 2;

    // How large a cell is and how many blocks it holds.
    struct Scale {
        int pitch = kMaxPitch;
        std::size_t perCell = 1;
        bool operator==(const Scale&) const = default;
    };

    // The slots a cell holds: [first, first + count), within one lane.
    struct Run {
        std::size_t first = 0;
        std::size_t count = 0;
    };

    struct Lane {
        std::size_t first = 0;     // its first slot
        std::size_t count = 0;     // its slots
        std::size_t firstCell = 0; // its first cell
        std::size_t cells = 0;     // ceil(count / perCell)
        int titleTop = 0;          // its title line's top, unscrolled (== cellsTop without titles)
        int cellsTop = 0;          // its first row's top, unscrolled
    };

    Scale scale;
    int cell = 0;    // side of a cell's square
    int columns = 0;
    int rows = 0;    // rows of cells, all lanes
    int titleHeight = 0;
    int viewHeight = 0; // the area's height
    int scroll = 0;     // px of content above the view, 0..maxScroll()
    std::size_t blocks = 0; // in the pool
    std::vector<Lane> lanes; // one, untitled, without lanes

    // The whole pool in `area`: single blocks as large as fit (kMaxPitch
    // down to kMinPitch), else runs at kRunPitch, as short as fit.
    static BlockMapLayout fit(QSize area, std::size_t blocks);
    static BlockMapLayout fit(QSize area, std::span<const std::size_t> laneSizes, int titleHeight);
    // The given scale, scrolled by `scroll` (clamped to what there is).
    static BlockMapLayout at(QSize area, std::span<const std::size_t> laneSizes, int titleHeight, Scale scale,
                             int scroll);
    // From the fitted scale (first) to single blocks at kMaxPitch: the run
    // halves each step, then the cell grows by about 1.4x (twice the area).
    static std::vector<Scale> zoomSteps(Scale fitted);

    int pitch() const { return scale.pitch; }
    std::size_t cellCount() const { return lanes.empty() ? 0 : lanes.back().firstCell + lanes.back().cells; }
    Run run(std::size_t cellIndex) const;
    std::size_t cellOfSlot(std::size_t slot) const; // precondition: slot < blocks
    std::size_t laneOfSlot(std::size_t slot) const; // which of `lanes` holds it
    QRect cellRect(std::size_t cellIndex) const;    // null beyond the cells
    QRect slotRect(std::size_t slot) const { return slot < blocks ? cellRect(cellOfSlot(slot)) : QRect(); }
    std::optional<std::size_t> cellAt(QPoint point) const; // nullopt on a gap, a title or outside
    // A lane's title line, as wide as the grid.
    QRect titleRect(std::size_t lane) const;
    // The bounding box of cells and titles, from the first one's corner (margins excluded).
    QSize gridSize() const;
    int contentHeight() const { return gridSize().height() + 2 * kMargin; }
    int maxScroll() const { return std::max(0, contentHeight() - viewHeight); }
    bool showsAll() const { return maxScroll() == 0; }
    // The slots of the rows in view, [first, end): what a minimap frames.
    Run slotsInView() const;

    // Calls f(cell index, run, cell rect) for every cell in view, in order,
    // stepping through the grid instead of dividing per cell (the paint loop).
    template <typename F>
    void forEachCell(F&& f) const {
        for (const Lane& lane : lanes) {
            const auto [begin, end] = cellsInView(lane);
            int column = static_cast<int>(begin % static_cast<std::size_t>(columns));
            QRect rect = cellRect(lane.firstCell + begin);
            for (std::size_t c = begin; c < end; ++c) {
                const std::size_t first = lane.first + c * scale.perCell;
                f(lane.firstCell + c, Run{first, std::min(scale.perCell, lane.first + lane.count - first)}, rect);
                if (++column < columns) {
                    rect.translate(scale.pitch, 0);
                } else {
                    column = 0;
                    rect.moveTo(kMargin, rect.top() + scale.pitch);
                }
            }
        }
    }

private:
    std::size_t laneOfCell(std::size_t cellIndex) const;
    std::pair<std::size_t, std::size_t> cellsInView(const Lane& lane) const; // lane-local [begin, end)
};

} // namespace kvscope::ui
