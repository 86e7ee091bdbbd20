#include "ui/blockmap/block_map_layout.h"

#include <algorithm>

namespace kvscope::ui {
namespace {

// A gap between cells keeps neighbours of one colour apart; below 4 px a
// gap would eat most of the cell, so tiny cells touch.
int gap_for(int pitch) {
    if (pitch >= 16)
        return 2;
    return pitch >= 4 ? 1 : 0;
}

BlockMapLayout with_pitch(int pitch, int columns, int rows, std::size_t blocks, std::size_t visible) {
    BlockMapLayout l;
    l.pitch = pitch;
    l.cell = pitch - gap_for(pitch);
    l.columns = columns;
    l.rows = rows;
    l.blocks = blocks;
    l.visible = visible;
    return l;
}

} // namespace

BlockMapLayout BlockMapLayout::fit(QSize area, std::size_t blocks) {
    const int width = std::max(1, area.width() - 2 * kMargin);
    const int height = std::max(1, area.height() - 2 * kMargin);
    if (blocks == 0)
        return with_pitch(kMaxPitch, 0, 0, 0, 0);
    for (int pitch = kMaxPitch; pitch >= 1; --pitch) {
        const auto columns = static_cast<std::size_t>(std::max(1, width / pitch));
        const std::size_t used_columns = std::min(columns, blocks);
        const std::size_t rows = (blocks + columns - 1) / columns;
        if (rows * static_cast<std::size_t>(pitch) <= static_cast<std::size_t>(height))
            return with_pitch(pitch, static_cast<int>(used_columns), static_cast<int>(rows), blocks, blocks);
    }
    // More blocks than pixels: show the first ones at 1 px and say so.
    const int columns = width;
    const int rows = height;
    const std::size_t visible = std::min(blocks, static_cast<std::size_t>(columns) * static_cast<std::size_t>(rows));
    return with_pitch(1, columns, rows, blocks, visible);
}

QRect BlockMapLayout::cellRect(std::size_t block) const {
    if (columns == 0 || block >= visible)
        return {};
    const auto column = static_cast<int>(block % static_cast<std::size_t>(columns));
    const auto row = static_cast<int>(block / static_cast<std::size_t>(columns));
    return {kMargin + column * pitch, kMargin + row * pitch, cell, cell};
}

std::optional<std::size_t> BlockMapLayout::blockAt(QPoint point) const {
    const int x = point.x() - kMargin;
    const int y = point.y() - kMargin;
    if (columns == 0 || x < 0 || y < 0)
        return std::nullopt;
    const int column = x / pitch;
    const int row = y / pitch;
    if (column >= columns || row >= rows || x % pitch >= cell || y % pitch >= cell)
        return std::nullopt;
    const std::size_t block = static_cast<std::size_t>(row) * static_cast<std::size_t>(columns) +
                              static_cast<std::size_t>(column);
    if (block >= visible)
        return std::nullopt;
    return block;
}

} // namespace kvscope::ui
