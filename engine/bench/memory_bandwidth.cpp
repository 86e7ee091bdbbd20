#include "engine/bench/memory_bandwidth.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

namespace kvscope {

double measure_copy_bandwidth_gb_per_s(int threads) {
    // Source and destination together exceed the caches (this machine class
    // has a 512 MiB L3), so the figure is main-memory bandwidth.
    constexpr std::size_t kBytes = std::size_t{512} << 20;
    constexpr int kRuns = 5;
    threads = std::max(threads, 1);
    std::vector<char> src(kBytes, 1), dst(kBytes, 0); // written once: pages are mapped before timing
    const std::size_t chunk = kBytes / static_cast<std::size_t>(threads);
    auto copy_part = [&](int t) {
        const std::size_t offset = static_cast<std::size_t>(t) * chunk;
        std::memcpy(dst.data() + offset, src.data() + offset, chunk);
    };
    double best = 0;
    for (int run = 0; run < kRuns; ++run) {
        const auto start = std::chrono::steady_clock::now();
        std::vector<std::thread> helpers;
        for (int t = 1; t < threads; ++t)
            helpers.emplace_back(copy_part, t);
        copy_part(0);
        for (std::thread& h : helpers)
            h.join();
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        best = std::max(best, 2.0 * static_cast<double>(chunk) * threads / seconds / 1e9);
    }
    return best;
}

} // namespace kvscope
