#include "ui/dashboards/block_fill_columns.h"

#include <algorithm>
#include <bit>
#include <utility>

namespace kvscope::ui {
namespace {

bool holdsTokens(BlockState state) { return state != BlockState::Free && state != BlockState::CachedFree; }

std::size_t ceilDiv(std::size_t a, std::size_t b) { return (a + b - 1) / b; }

} // namespace

BlockFillColumns::BlockFillColumns(std::size_t max_rows, std::size_t capacity, std::vector<std::uint32_t> groups)
    : groups_(std::move(groups)), max_rows_(std::max<std::size_t>(max_rows, 1)),
      capacity_(std::max<std::size_t>(capacity, 1)) {}

bool BlockFillColumns::counts(const BlockInfo& block) const {
    return holdsTokens(block.state) &&
           (groups_.empty() || std::find(groups_.begin(), groups_.end(), block.group) != groups_.end());
}

void BlockFillColumns::reshape(std::size_t blocks) {
    columns_.clear();
    blocks_ = blocks;
    fit_rows();
}

void BlockFillColumns::record(std::uint64_t step, const PoolSnapshot& pool) {
    if (pool.blocks.size() != blocks_ || (!columns_.empty() && step < columns_.back().step))
        reshape(pool.blocks.size());
    std::size_t used = 0; // blocks up to the last holding tokens
    for (std::size_t b = blocks_; b > 0 && used == 0; --b)
        if (counts(pool.blocks[b - 1]))
            used = b;
    Column column{step, std::bit_ceil(std::max<std::size_t>(1, ceilDiv(used, kFineRowsPerRow * max_rows_))), {}};
    column.fill_sums.assign(ceilDiv(used, column.blocks_per_fine_row), 0.0f);
    const double blockSlots = pool.layout.block_size();
    for (std::size_t b = 0; b < used; ++b)
        if (counts(pool.blocks[b]))
            column.fill_sums[b / column.blocks_per_fine_row] += static_cast<float>(pool.blocks[b].fill / blockSlots);
    if (!columns_.empty() && columns_.back().step == step)
        columns_.back() = std::move(column);
    else
        columns_.push_back(std::move(column));
    if (columns_.size() > capacity_)
        columns_.pop_front();
    fit_rows();
}

void BlockFillColumns::fit_rows() {
    std::size_t used = 0; // blocks up to the last fine row holding tokens, in any column
    for (const Column& c : columns_)
        used = std::max(used, c.fill_sums.size() * c.blocks_per_fine_row);
    const std::size_t wanted = std::min(blocks_, std::max(kMinExtent, std::bit_ceil(ceilDiv(5 * used, 4))));
    blocks_per_row_ = std::bit_ceil(std::max<std::size_t>(1, ceilDiv(wanted, max_rows_)));
    rows_ = ceilDiv(wanted, blocks_per_row_);
    extent_ = std::min(blocks_, rows_ * blocks_per_row_);
}

// Rows and fine rows are runs of a power of two of blocks from block 0,
// and a row is never finer than a column's fine rows (the extent covers
// every column's blocks in use, in at most max_rows_ rows; a column has up
// to kFineRowsPerRow times as many fine rows): a row holds whole fine rows.
float BlockFillColumns::fill(const Column& column, std::size_t row) const {
    const std::size_t first = row * blocks_per_row_;
    const std::size_t end = std::min(first + blocks_per_row_, blocks_); // the pool's last row may be short
    const std::size_t fine = column.blocks_per_fine_row;
    double sum = 0;
    for (std::size_t f = first / fine; f < std::min(ceilDiv(end, fine), column.fill_sums.size()); ++f)
        sum += column.fill_sums[f];
    return static_cast<float>(sum / static_cast<double>(end - first));
}

const BlockFillColumns::Column& BlockFillColumns::at_step(std::uint64_t step) const {
    auto after = std::upper_bound(columns_.begin(), columns_.end(), step,
                                  [](std::uint64_t s, const Column& c) { return s < c.step; });
    return after == columns_.begin() ? columns_.front() : *std::prev(after);
}

} // namespace kvscope::ui
