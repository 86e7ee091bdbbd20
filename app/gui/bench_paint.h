// kvscope --bench-paint: how long the block map takes to paint a large,
// busy pool. It lives in the desktop app, not kvscope-cli, because it needs
// Qt Widgets, which the command line links none of.
#pragma once

#include <cstdint>

namespace kvscope::gui {

struct BenchPaintOptions {
    std::uint32_t blocks = 200000; // a vLLM pool on one H100 is 100,000+
    int frames = 50;
    int width = 1280;
    int height = 720;
    bool json = false; // one JSON object instead of two lines for people
};

// Paints `frames` frames offscreen at "fit" and zoomed to single blocks and
// prints the median, p95 and p99 ms per frame of each to stdout; returns the
// exit code. Needs a QApplication.
int run_bench_paint(const BenchPaintOptions& options);

} // namespace kvscope::gui
