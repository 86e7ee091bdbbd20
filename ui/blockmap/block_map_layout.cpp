#include "ui/blockmap/block_map_layout.h"

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

std::size_t ceil_div(std::size_t a, std::size_t b) { return (a + b - 1) / b; }

std::size_t total(std::span<const std::size_t> sizes) {
    return std::accumulate(sizes.begin(), sizes.end(), std::size_t{0});
}

// The cell pitches single blocks zoom through, each about twice the last's area.
constexpr int kSinglePitches[] = {7, 10, 14, 20, 28, 40, 56, BlockMapLayout::kMaxPitch};

} // namespace

BlockMapLayout BlockMapLayout::fit(QSize area, std::size_t blocks) {
    const std::size_t sizes[] = {blocks};
    return fit(area, sizes, 0);
}

BlockMapLayout BlockMapLayout::fit(QSize area, std::span<const std::size_t> laneSizes, int titleHeight) {
    const int width = std::max(1, area.width() - 2 * kMargin);
    const int height = std::max(1, area.height() - 2 * kMargin);
    const std::size_t blocks = total(laneSizes);
    const std::size_t lanes = laneSizes.size();
    const int cellsHeight = height - static_cast<int>(lanes) * titleHeight;
    if (blocks == 0)
        return at(area, laneSizes, titleHeight, {}, 0);
    // However the blocks are split between the lanes, each lane's last row
    // adds at most one row (and each lane's last run at most one cell).
    const auto rowsAt = [&](int pitch) { return cellsHeight / pitch - static_cast<int>(lanes - 1); };
    for (int pitch = kMaxPitch; pitch >= kMinPitch; --pitch) {
        const auto columns = static_cast<std::size_t>(std::max(1, width / pitch));
        if (const int rows = rowsAt(pitch); rows > 0 && ceil_div(blocks, columns) <= static_cast<std::size_t>(rows))
            return at(area, laneSizes, titleHeight, {pitch, 1}, 0);
    }
    const auto columns = static_cast<std::size_t>(std::max(1, width / kRunPitch));
    const int rows = rowsAt(kRunPitch);
    const std::size_t cells = rows > 0 ? static_cast<std::size_t>(rows) * columns : 0;
    if (cells <= lanes - 1) // not even a cell per lane: one run per lane, scrolled
        return at(area, laneSizes, titleHeight, {kRunPitch, blocks}, 0);
    const std::size_t perCell = std::max<std::size_t>(2, ceil_div(blocks, cells - (lanes - 1)));
    return at(area, laneSizes, titleHeight, {kRunPitch, perCell}, 0);
}

BlockMapLayout BlockMapLayout::at(QSize area, std::span<const std::size_t> laneSizes, int titleHeight, Scale scale,
                                  int scroll) {
    BlockMapLayout l;
    l.scale = {std::clamp(scale.pitch, 1, kMaxPitch), std::max<std::size_t>(scale.perCell, 1)};
    l.cell = l.scale.pitch - gap_for(l.scale.pitch);
    l.titleHeight = titleHeight;
    l.viewHeight = area.height();
    l.blocks = total(laneSizes);
    const std::size_t k = l.scale.perCell;
    const auto fitting = static_cast<std::size_t>(std::max(1, (area.width() - 2 * kMargin) / l.scale.pitch));
    l.columns = static_cast<int>(std::min(fitting, ceil_div(l.blocks, k))); // 0: no blocks
    int y = kMargin;
    std::size_t first = 0, firstCell = 0;
    for (std::size_t count : laneSizes) {
        const std::size_t cells = ceil_div(count, k);
        const int laneRows = l.columns == 0 ? 0 : static_cast<int>(ceil_div(cells, static_cast<std::size_t>(l.columns)));
        l.lanes.push_back({first, count, firstCell, cells, y, y + titleHeight});
        l.rows += laneRows;
        y += titleHeight + laneRows * l.scale.pitch;
        first += count;
        firstCell += cells;
    }
    l.scroll = std::clamp(scroll, 0, l.maxScroll());
    return l;
}

std::vector<BlockMapLayout::Scale> BlockMapLayout::zoomSteps(Scale fitted) {
    std::vector<Scale> steps{fitted};
    for (std::size_t k = fitted.perCell; k > 1;) {
        k = ceil_div(k, 2);
        if (k > 1)
            steps.push_back({kRunPitch, k});
    }
    const int after = fitted.perCell > 1 ? 0 : fitted.pitch;
    for (int pitch : kSinglePitches)
        if (pitch > after)
            steps.push_back({pitch, 1});
    return steps;
}

std::size_t BlockMapLayout::laneOfCell(std::size_t cellIndex) const {
    std::size_t lane = 0;
    while (lane + 1 < lanes.size() && lanes[lane + 1].firstCell <= cellIndex)
        ++lane;
    return lane;
}

std::size_t BlockMapLayout::laneOfSlot(std::size_t slot) const {
    std::size_t lane = 0;
    while (lane + 1 < lanes.size() && lanes[lane + 1].first <= slot)
        ++lane;
    return lane;
}

BlockMapLayout::Run BlockMapLayout::run(std::size_t cellIndex) const {
    if (cellIndex >= cellCount())
        return {};
    const Lane& lane = lanes[laneOfCell(cellIndex)];
    const std::size_t first = lane.first + (cellIndex - lane.firstCell) * scale.perCell;
    return {first, std::min(scale.perCell, lane.first + lane.count - first)};
}

std::size_t BlockMapLayout::cellOfSlot(std::size_t slot) const {
    const Lane& lane = lanes[laneOfSlot(slot)];
    return lane.firstCell + (slot - lane.first) / scale.perCell;
}

QRect BlockMapLayout::cellRect(std::size_t cellIndex) const {
    if (columns == 0 || cellIndex >= cellCount())
        return {};
    const Lane& lane = lanes[laneOfCell(cellIndex)];
    const std::size_t index = cellIndex - lane.firstCell;
    const auto column = static_cast<int>(index % static_cast<std::size_t>(columns));
    const auto row = static_cast<int>(index / static_cast<std::size_t>(columns));
    return {kMargin + column * scale.pitch, lane.cellsTop + row * scale.pitch - scroll, cell, cell};
}

std::optional<std::size_t> BlockMapLayout::cellAt(QPoint point) const {
    const int x = point.x() - kMargin;
    if (columns == 0 || x < 0 || point.y() < 0 || point.y() >= viewHeight)
        return std::nullopt;
    const int pitch = scale.pitch;
    const int column = x / pitch;
    if (column >= columns || x % pitch >= cell)
        return std::nullopt;
    const int contentY = point.y() + scroll;
    for (const Lane& lane : lanes) {
        const int y = contentY - lane.cellsTop;
        if (y < 0)
            return std::nullopt; // on this lane's title (or above the first)
        const int row = y / pitch;
        if (static_cast<std::size_t>(row) >= ceil_div(lane.cells, static_cast<std::size_t>(columns)))
            continue; // below this lane: try the next
        if (y % pitch >= cell)
            return std::nullopt;
        const std::size_t index =
            static_cast<std::size_t>(row) * static_cast<std::size_t>(columns) + static_cast<std::size_t>(column);
        if (index >= lane.cells)
            return std::nullopt;
        return lane.firstCell + index;
    }
    return std::nullopt;
}

QRect BlockMapLayout::titleRect(std::size_t lane) const {
    if (lane >= lanes.size() || titleHeight == 0)
        return {};
    return {kMargin, lanes[lane].titleTop - scroll, std::max(gridSize().width(), 0), titleHeight};
}

QSize BlockMapLayout::gridSize() const {
    if (columns == 0 || lanes.empty())
        return {};
    const int gap = scale.pitch - cell;
    const Lane& last = lanes.back();
    const int bottom =
        last.cellsTop + static_cast<int>(ceil_div(last.cells, static_cast<std::size_t>(columns))) * scale.pitch - gap;
    return {columns * scale.pitch - gap, std::max(bottom, last.cellsTop) - kMargin};
}

std::pair<std::size_t, std::size_t> BlockMapLayout::cellsInView(const Lane& lane) const {
    if (columns == 0 || lane.cells == 0)
        return {0, 0};
    const int pitch = scale.pitch;
    const int top = scroll - lane.cellsTop;
    const int bottom = scroll + viewHeight - lane.cellsTop;
    if (bottom <= 0)
        return {0, 0};
    const auto cols = static_cast<std::size_t>(columns);
    const std::size_t firstRow = top > 0 ? static_cast<std::size_t>(top / pitch) : 0;
    const std::size_t endRow = static_cast<std::size_t>((bottom + pitch - 1) / pitch);
    const std::size_t begin = std::min(firstRow * cols, lane.cells);
    const std::size_t end = std::min(endRow * cols, lane.cells);
    return end > begin ? std::pair{begin, end} : std::pair<std::size_t, std::size_t>{0, 0};
}

BlockMapLayout::Run BlockMapLayout::slotsInView() const {
    std::optional<std::size_t> first;
    std::size_t end = 0;
    for (const Lane& lane : lanes) {
        const auto [b, e] = cellsInView(lane);
        if (e == 0)
            continue;
        if (!first)
            first = lane.first + b * scale.perCell;
        end = std::min(lane.first + lane.count, lane.first + e * scale.perCell);
    }
    return first ? Run{*first, end - *first} : Run{};
}

} // namespace kvscope::ui
