// kvscope --bench-paint: the block map's paint time, measured through the
// widget's own paint path (render into an image).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <random>
#include <vector>

#include <QImage>
#include <nlohmann/json.hpp>

#include "app/gui/bench_paint.h"
#include "engine/core/percentiles.h"
#include "engine/kv/kv_cache_manager.h"
#include "ui/blockmap/block_map_widget.h"

namespace kvscope::gui {
namespace {

constexpr std::uint32_t kBlockSize = 16;
constexpr std::size_t kSystemPromptTokens = 64; // shared by every 6th sequence: prefix-cache hits

// A pool that looks like a busy server's: ~90 % used by sequences of mixed
// lengths (partially filled last blocks), shared blocks from forks and a
// common system prompt, and cached-free blocks left by finished sequences.
std::shared_ptr<const PoolSnapshot> busy_pool(std::uint32_t num_blocks) {
    KvCacheManager m({.layout = KvLayout(kAllocationDemoGeometry, KvDtype::F16, kBlockSize), .num_blocks = num_blocks});
    std::mt19937 rng(7);
    std::uniform_int_distribution<std::uint32_t> length(20, 600);
    std::vector<TokenId> system_prompt(kSystemPromptTokens);
    TokenId next_token = 1;
    for (TokenId& t : system_prompt)
        t = next_token++;
    const std::size_t keep_free = num_blocks / 10;
    for (SeqId seq = 0;; seq += 2) {
        std::vector<TokenId> prompt(seq % 6 == 0 ? system_prompt : std::vector<TokenId>{});
        for (std::uint32_t n = length(rng); n > 0; --n)
            prompt.push_back(next_token++);
        if (m.layout().blocks_for_tokens(prompt.size()) + 1 + keep_free > m.pool().num_free())
            break;
        m.allocate(seq, prompt, kBlockSize);
        if (seq % 10 == 4) { // a parallel-sampling child: shares, then copies its last block on write
            m.fork(seq, seq + 1);
            m.append(seq + 1, next_token++);
        }
        if (seq % 14 == 6)
            m.free(seq); // its full blocks stay cached-free
    }
    return m.snapshot();
}

// Each frame hands the widget the snapshot again, as a live view would on
// every engine update, so the cells are rendered anew rather than reused.
Percentiles time_frames(ui::BlockMapWidget& widget, const std::shared_ptr<const PoolSnapshot>& snapshot,
                       QImage& target, int frames) {
    widget.setSnapshot(snapshot);
    widget.render(&target); // warm-up: polish, first allocation of the cell image
    std::vector<double> ms;
    for (int i = 0; i < frames; ++i) {
        widget.setSnapshot(snapshot);
        const auto start = std::chrono::steady_clock::now();
        widget.render(&target);
        ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
    }
    return percentiles_ms(std::move(ms));
}

} // namespace

// The map at "fit" (runs of blocks per cell once the pool is large), then
// zoomed in to one block per cell, scrolled to the middle of the pool.
int run_bench_paint(const BenchPaintOptions& options) {
    const auto [blocks, frames, width, height, json] = options;
    const auto snapshot = busy_pool(blocks);
    ui::BlockMapWidget widget;
    widget.resize(width, height);
    QImage target(width, height, QImage::Format_ARGB32_Premultiplied);
    const Percentiles fit = time_frames(widget, snapshot, target, frames);
    const ui::BlockMapLayout::Scale fitScale = widget.cells().scale;
    const int cell = widget.cells().cell;
    while (widget.cells().scale.perCell > 1)
        widget.zoomIn();
    const Percentiles single = time_frames(widget, snapshot, target, frames);

    if (json) {
        const nlohmann::json out = {
            {"blocks", blocks}, {"frames", frames}, {"width", width}, {"height", height}, {"cell_px", cell},
            {"blocks_per_cell", fitScale.perCell},
            {"fit", {{"median_ms", fit.p50_ms}, {"p95_ms", fit.p95_ms}, {"p99_ms", fit.p99_ms}}},
            {"single_blocks", {{"median_ms", single.p50_ms}, {"p95_ms", single.p95_ms}, {"p99_ms", single.p99_ms}}}};
        std::printf("%s\n", out.dump().c_str());
    } else {
        std::printf("block map paint: %u blocks at %dx%d, %d frames each (60 fps budget: 16 ms)\n", blocks, width,
                    height, frames);
        std::printf("  fit (%d px cells, %zu blocks per cell): median %.2f, p95 %.2f, p99 %.2f ms/frame\n", cell,
                    fitScale.perCell, fit.p50_ms, fit.p95_ms, fit.p99_ms);
        std::printf("  zoomed to single blocks: median %.2f, p95 %.2f, p99 %.2f ms/frame\n", single.p50_ms,
                    single.p95_ms, single.p99_ms);
    }
    return 0;
}

} // namespace kvscope::gui
