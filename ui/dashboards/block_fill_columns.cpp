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
    blocks_per_fine_row_ = std::max<std::size_t>(1, ceilDiv(blocks, kFineRows));
    fit_rows();
}

void BlockFillColumns::record(std::uint64_t step, const PoolSnapshot& pool) {
    if (pool.blocks.size() != blocks_ || (!columns_.empty() && step < columns_.back().step))
        reshape(pool.blocks.size());
    Column column{step, {}};
    const double blockSlots = pool.layout.block_size();
    for (std::size_t b = 0; b < blocks_; ++b) {
        if (!counts(pool.blocks[b]))
            continue;
        const std::size_t fine = b / blocks_per_fine_row_;
        if (column.fill_sums.size() <= fine)
            column.fill_sums.resize(fine + 1, 0.0f);
        column.fill_sums[fine] += static_cast<float>(pool.blocks[b].fill / blockSlots);
    }
    if (!columns_.empty() && columns_.back().step == step)
        columns_.back() = std::move(column);
    else
        columns_.push_back(std::move(column));
    if (columns_.size() > capacity_)
        columns_.pop_front();
    fit_rows();
}

void BlockFillColumns::fit_rows() {
    std::size_t fine = 0; // fine rows up to the last holding tokens, in any column
    for (const Column& c : columns_)
        fine = std::max(fine, c.fill_sums.size());
    const std::size_t used = fine * blocks_per_fine_row_;
    const std::size_t wanted = std::min(blocks_, std::max(kMinExtent, std::bit_ceil(ceilDiv(5 * used, 4))));
    fine_rows_per_row_ = std::max<std::size_t>(1, ceilDiv(ceilDiv(wanted, blocks_per_fine_row_), max_rows_));
    rows_ = ceilDiv(wanted, blocks_per_row());
    extent_ = std::min(blocks_, rows_ * blocks_per_row());
}

float BlockFillColumns::fill(const Column& column, std::size_t row) const {
    const std::size_t per = fine_rows_per_row_;
    const std::size_t begin = row * per;
    const std::size_t end = std::min(begin + per, column.fill_sums.size());
    double sum = 0;
    for (std::size_t f = begin; f < end; ++f)
        sum += column.fill_sums[f];
    // The pool's last row may be short.
    const std::size_t firstBlock = row * blocks_per_row();
    const std::size_t blocks = std::min(firstBlock + blocks_per_row(), blocks_) - firstBlock;
    return static_cast<float>(sum / static_cast<double>(blocks));
}

const BlockFillColumns::Column& BlockFillColumns::at_step(std::uint64_t step) const {
    auto after = std::upper_bound(columns_.begin(), columns_.end(), step,
                                  [](std::uint64_t s, const Column& c) { return s < c.step; });
    return after == columns_.begin() ? columns_.front() : *std::prev(after);
}

} // namespace kvscope::ui
