#include "ui/dashboards/block_fill_columns.h"

#include <algorithm>
#include <utility>

namespace kvscope::ui {
namespace {

bool holdsTokens(BlockState state) { return state != BlockState::Free && state != BlockState::CachedFree; }

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
    blocks_per_row_ = std::max<std::size_t>(1, (blocks + max_rows_ - 1) / max_rows_);
    rows_ = (blocks + blocks_per_row_ - 1) / blocks_per_row_;
}

void BlockFillColumns::record(std::uint64_t step, const PoolSnapshot& pool) {
    if (pool.blocks.size() != blocks_ || (!columns_.empty() && step < columns_.back().step))
        reshape(pool.blocks.size());
    Column column{step, std::vector<float>(rows_, 0.0f)};
    const double blockSlots = pool.layout.block_size();
    for (std::size_t row = 0; row < rows_; ++row) {
        const std::size_t begin = row * blocks_per_row_;
        const std::size_t end = std::min(begin + blocks_per_row_, blocks_);
        double sum = 0;
        for (std::size_t b = begin; b < end; ++b)
            if (counts(pool.blocks[b]))
                sum += pool.blocks[b].fill / blockSlots;
        column.fill[row] = static_cast<float>(sum / static_cast<double>(end - begin));
    }
    if (!columns_.empty() && columns_.back().step == step)
        columns_.back() = std::move(column);
    else
        columns_.push_back(std::move(column));
    if (columns_.size() > capacity_)
        columns_.pop_front();
}

const BlockFillColumns::Column& BlockFillColumns::at_step(std::uint64_t step) const {
    auto after = std::upper_bound(columns_.begin(), columns_.end(), step,
                                  [](std::uint64_t s, const Column& c) { return s < c.step; });
    return after == columns_.begin() ? columns_.front() : *std::prev(after);
}

} // namespace kvscope::ui
