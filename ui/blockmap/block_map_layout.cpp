#include "ui/blockmap/block_map_layout.h"

#include <algorithm>
#include <numeric>

namespace kvscope::ui {
namespace {

// A gap between cells keeps neighbours of one colour apart; below 4 px a
// gap would eat most of the cell, so tiny cells touch.
int gap_for(int pitch) {
    if (pitch >= 16)
        return 2;
    return pitch >= 4 ? 1 : 0;
}

std::size_t rows_for(std::size_t cells, std::size_t columns) { return (cells + columns - 1) / columns; }

// Places the lanes top to bottom at `pitch` and counts the slots that fit
// in `height` (a prefix: lanes and their rows run downwards).
BlockMapLayout with_pitch(int pitch, int columns, int height, std::span<const std::size_t> sizes, int titleHeight) {
    BlockMapLayout l;
    l.pitch = pitch;
    l.cell = pitch - gap_for(pitch);
    l.titleHeight = titleHeight;
    l.blocks = std::accumulate(sizes.begin(), sizes.end(), std::size_t{0});
    l.columns = static_cast<int>(std::min(static_cast<std::size_t>(columns), l.blocks)); // 0: no blocks
    int y = BlockMapLayout::kMargin;
    std::size_t first = 0;
    const int bottom = BlockMapLayout::kMargin + height;
    for (std::size_t count : sizes) {
        const int laneRows = l.columns == 0 ? 0 : static_cast<int>(rows_for(count, static_cast<std::size_t>(l.columns)));
        l.lanes.push_back({first, count, y, y + titleHeight});
        const int cellsTop = y + titleHeight;
        if (l.visible == first) { // every earlier slot fits: count this lane's rows that do
            const int fitting = std::clamp((bottom - cellsTop + (pitch - l.cell)) / pitch, 0, laneRows);
            l.visible = first + std::min(count, static_cast<std::size_t>(fitting) * static_cast<std::size_t>(std::max(l.columns, 0)));
        }
        l.rows += laneRows;
        y = cellsTop + laneRows * pitch;
        first += count;
    }
    return l;
}

} // namespace

BlockMapLayout BlockMapLayout::fit(QSize area, std::size_t blocks) {
    const std::size_t sizes[] = {blocks};
    return fit(area, sizes, 0);
}

BlockMapLayout BlockMapLayout::fit(QSize area, std::span<const std::size_t> laneSizes, int titleHeight) {
    const int width = std::max(1, area.width() - 2 * kMargin);
    const int height = std::max(1, area.height() - 2 * kMargin);
    const std::size_t blocks = std::accumulate(laneSizes.begin(), laneSizes.end(), std::size_t{0});
    const std::size_t lanes = laneSizes.size();
    const int titles = static_cast<int>(lanes) * titleHeight;
    if (blocks == 0)
        return with_pitch(kMaxPitch, 0, height, laneSizes, titleHeight);
    for (int pitch = kMaxPitch; pitch >= 1; --pitch) {
        const auto columns = static_cast<std::size_t>(std::max(1, width / pitch));
        // The most rows any split of the blocks between the lanes can take.
        const std::size_t rows = rows_for(blocks, columns) + lanes - 1;
        if (rows * static_cast<std::size_t>(pitch) + static_cast<std::size_t>(std::max(titles, 0)) <=
            static_cast<std::size_t>(height))
            return with_pitch(pitch, static_cast<int>(columns), height, laneSizes, titleHeight);
    }
    // More blocks than pixels: show the first ones at 1 px and say so.
    return with_pitch(1, width, height, laneSizes, titleHeight);
}

std::size_t BlockMapLayout::laneOf(std::size_t slot) const {
    std::size_t lane = 0;
    while (lane + 1 < lanes.size() && lanes[lane + 1].first <= slot)
        ++lane;
    return lane;
}

QRect BlockMapLayout::cellRect(std::size_t slot) const {
    if (columns == 0 || slot >= visible)
        return {};
    const Lane& lane = lanes[laneOf(slot)];
    const std::size_t index = slot - lane.first;
    const auto column = static_cast<int>(index % static_cast<std::size_t>(columns));
    const auto row = static_cast<int>(index / static_cast<std::size_t>(columns));
    return {kMargin + column * pitch, lane.cellsTop + row * pitch, cell, cell};
}

std::optional<std::size_t> BlockMapLayout::blockAt(QPoint point) const {
    const int x = point.x() - kMargin;
    if (columns == 0 || x < 0 || point.y() < kMargin)
        return std::nullopt;
    const int column = x / pitch;
    if (column >= columns || x % pitch >= cell)
        return std::nullopt;
    for (const Lane& lane : lanes) {
        const int y = point.y() - lane.cellsTop;
        if (y < 0)
            return std::nullopt; // on this lane's title (or above the first)
        const int row = y / pitch;
        const std::size_t laneRows = rows_for(lane.count, static_cast<std::size_t>(columns));
        if (static_cast<std::size_t>(row) >= laneRows)
            continue; // below this lane: try the next
        if (y % pitch >= cell)
            return std::nullopt;
        const std::size_t index =
            static_cast<std::size_t>(row) * static_cast<std::size_t>(columns) + static_cast<std::size_t>(column);
        if (index >= lane.count || lane.first + index >= visible)
            return std::nullopt;
        return lane.first + index;
    }
    return std::nullopt;
}

QRect BlockMapLayout::titleRect(std::size_t lane) const {
    if (lane >= lanes.size() || titleHeight == 0)
        return {};
    return {kMargin, lanes[lane].titleTop, std::max(gridSize().width(), 0), titleHeight};
}

QSize BlockMapLayout::gridSize() const {
    if (columns == 0 || lanes.empty())
        return {};
    const int gap = pitch - cell;
    const Lane& last = lanes.back();
    const int bottom = last.cellsTop + static_cast<int>(rows_for(last.count, static_cast<std::size_t>(columns))) * pitch - gap;
    return {columns * pitch - gap, std::max(bottom, last.cellsTop) - kMargin};
}

} // namespace kvscope::ui
