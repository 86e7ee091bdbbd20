#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <vector>

#include "engine/kv/pool_snapshot.h"

namespace kvscope::ui {

// The fragmentation heatmap's data: per recorded engine step, the fill
// fraction of every block (slots holding a token / block size; free and
// cached-free blocks count as 0, they hold no live token), averaged over
// rows of consecutive blocks when the pool has more blocks than rows, so
// a 65,536-block pool costs the same to paint as a 256-block one. Given KV
// cache groups (kv_groups.h), only blocks those groups hold count; the
// rest count as 0, as free ones do: one kind of attention layer's blocks.
class BlockFillColumns {
public:
    struct Column {
        std::uint64_t step = 0;
        std::vector<float> fill; // one value per row
    };

    static constexpr std::size_t kMaxRows = 256;
    static constexpr std::size_t kCapacity = 600;

    // groups: those whose blocks count; empty: every block.
    explicit BlockFillColumns(std::size_t max_rows = kMaxRows, std::size_t capacity = kCapacity,
                              std::vector<std::uint32_t> groups = {});

    // A new step appends a column (dropping the oldest beyond capacity); the
    // same step again replaces the last one; an earlier step, or a pool of
    // another size, means a new engine: the columns start over.
    void record(std::uint64_t step, const PoolSnapshot& pool);

    std::size_t blocks() const { return blocks_; }
    std::size_t rows() const { return rows_; }
    std::size_t blocks_per_row() const { return blocks_per_row_; }
    const std::deque<Column>& columns() const { return columns_; }

    // The column showing the pool at `step`: the latest recorded at or
    // before it (the first one when `step` precedes them all). Requires a column.
    const Column& at_step(std::uint64_t step) const;

private:
    void reshape(std::size_t blocks);

    bool counts(const BlockInfo& block) const;

    std::vector<std::uint32_t> groups_;
    std::size_t max_rows_;
    std::size_t capacity_;
    std::size_t blocks_ = 0;
    std::size_t rows_ = 0;
    std::size_t blocks_per_row_ = 1;
    std::deque<Column> columns_;
};

} // namespace kvscope::ui
