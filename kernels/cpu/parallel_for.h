// Internal: the one loop shape the kernels parallelize, over OpenMP.
#pragma once

#include <algorithm>
#include <cstddef>

#include <omp.h>

namespace kvscope::kernels::cpu::detail {

enum class Schedule {
    // One contiguous range per thread: for memory-bound streams (matvec
    // rows). Measured: 20-35% more bandwidth than handing out chunks,
    // because each thread's hardware prefetcher follows one long stream.
    Even,
    // Chunks of about n / (8 x threads) handed out as threads finish: for
    // items of uneven cost (causal attention) or compute-bound tiles, and
    // it lets the other threads take over when the OS preempts one.
    Dynamic,
};

// Calls body(i, thread) for every i in [0, n), where thread < threads names
// the calling thread (for per-thread scratch). With threads <= 1 the loop
// runs inline: entering an OpenMP region, even a one-thread one, costs
// microseconds a small decode-step call cannot afford.
template <typename Body>
void parallel_for(std::size_t n, int threads, Schedule schedule, Body&& body) {
    if (threads <= 1 || n <= 1) {
        for (std::size_t i = 0; i < n; ++i)
            body(i, 0);
        return;
    }
    const std::size_t chunk = std::max<std::size_t>(1, n / (8 * static_cast<std::size_t>(threads)));
#pragma omp parallel num_threads(threads)
    {
        const int thread = omp_get_thread_num();
        if (schedule == Schedule::Even) {
#pragma omp for schedule(static)
            for (std::size_t i = 0; i < n; ++i)
                body(i, thread);
        } else {
#pragma omp for schedule(dynamic, chunk)
            for (std::size_t i = 0; i < n; ++i)
                body(i, thread);
        }
    }
}

} // namespace kvscope::kernels::cpu::detail
