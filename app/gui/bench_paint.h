// kvscope --bench-paint: how long the block map takes to paint a large,
// busy pool. It lives in the desktop app, not kvscope-cli, because it needs
// Qt Widgets, which the command line links none of.
#pragma once

#include <cstdint>

namespace kvscope::gui {

struct BenchPaintOptions {
    std::uint32_t blocks = 65536;
    int frames = 50;
    int width = 1280;
    int height = 720;
    bool json = false; // one JSON object instead of two lines for people
};

// Paints `frames` frames offscreen and prints the median and p95 ms per
// frame to stdout; returns the exit code. Needs a QApplication.
int run_bench_paint(const BenchPaintOptions& options);

} // namespace kvscope::gui
