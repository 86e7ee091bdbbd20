#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <vector>

#include "engine/kv/pool_snapshot.h"

namespace kvscope::ui {

// The fragmentation heatmap's data: per recorded engine step, the fill
// fraction of the pool's blocks (slots holding a token / block size; free
// and cached-free blocks count as 0, they hold no live token). Given KV
// cache groups (kv_groups.h), only blocks those groups hold count; the
// rest count as 0, as free ones do: one kind of attention layer's blocks.
//
// The heatmap shows the blocks in use, not the whole pool: its rows cover
// [0, extent()), where the extent is the highest block holding tokens in
// any recorded column, plus a quarter for headroom, rounded up to a power
// of two (at least kMinExtent blocks, at most the pool). One chat in a
// 2,048-block pool is then 16 rows, not one row of 256. Those blocks are
// averaged over rows of consecutive blocks when there are more of them
// than kMaxRows, so a 65,536-block pool costs the same to paint as a
// 256-block one.
//
// Each column keeps the fill of "fine rows" of consecutive blocks, up to its
// last block holding tokens: one block each while at most
// kFineRowsPerRow * max_rows blocks are in use, else the fewest blocks (a
// power of two) that make that many rows of them. The rows are reshaped over a new extent from what was
// recorded; a column of a nearly empty pool is short and exact, whatever
// the pool's size (one chat in 200,000 blocks is 16 rows).
class BlockFillColumns {
public:
    struct Column {
        std::uint64_t step = 0;
        std::size_t blocks_per_fine_row = 1; // a power of two
        // Per fine row, the sum of its blocks' fill fractions, up to the
        // last fine row holding tokens (empty when none does).
        std::vector<float> fill_sums;
    };

    static constexpr std::size_t kMaxRows = 256;
    static constexpr std::size_t kCapacity = 600;
    static constexpr std::size_t kFineRowsPerRow = 4;
    static constexpr std::size_t kMinExtent = 16;

    // groups: those whose blocks count; empty: every block.
    explicit BlockFillColumns(std::size_t max_rows = kMaxRows, std::size_t capacity = kCapacity,
                              std::vector<std::uint32_t> groups = {});

    // A new step appends a column (dropping the oldest beyond capacity); the
    // same step again replaces the last one; an earlier step, or a pool of
    // another size, means a new engine: the columns start over.
    void record(std::uint64_t step, const PoolSnapshot& pool);

    std::size_t blocks() const { return blocks_; } // the pool's
    std::size_t extent() const { return extent_; }  // blocks shown: [0, extent), whole rows
    std::size_t rows() const { return rows_; }      // rows over the extent
    std::size_t blocks_per_row() const { return blocks_per_row_; } // a power of two
    const std::deque<Column>& columns() const { return columns_; }

    // The column showing the pool at `step`: the latest recorded at or
    // before it (the first one when `step` precedes them all). Requires a column.
    const Column& at_step(std::uint64_t step) const;
    // Row `row`'s (< rows()) mean fill in `column`.
    float fill(const Column& column, std::size_t row) const;

private:
    void reshape(std::size_t blocks);
    bool counts(const BlockInfo& block) const;
    void fit_rows(); // extent and rows from the columns recorded

    std::vector<std::uint32_t> groups_;
    std::size_t max_rows_;
    std::size_t capacity_;
    std::size_t blocks_ = 0;
    std::size_t blocks_per_row_ = 1;
    std::size_t extent_ = 0;
    std::size_t rows_ = 0;
    std::deque<Column> columns_;
};

} // namespace kvscope::ui
