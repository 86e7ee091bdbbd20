// Internal: the one loop shape the kernels parallelize, over OpenMP.
#pragma once

#include <algorithm>
#include <cstddef>

#include <omp.h>

namespace kvscope::kernels::cpu::detail {

// Calls body(i, thread) for every i in [0, n), where thread < threads names
// the calling thread (for per-thread scratch).
//
// Items are handed out in chunks of about n / (8 * threads), not split
// evenly up front: item costs vary (causal attention), and when the OS
// takes a core away from one thread (a UI thread, another process) the
// others take over its remaining chunks instead of waiting for it.
//
// With threads <= 1 the loop runs inline: entering an OpenMP region, even a
// one-thread one, costs microseconds a small decode-step call cannot afford.
template <typename Body>
void parallel_for(std::size_t n, int threads, Body&& body) {
    if (threads <= 1 || n <= 1) {
        for (std::size_t i = 0; i < n; ++i)
            body(i, 0);
        return;
    }
    const std::size_t chunk = std::max<std::size_t>(1, n / (8 * static_cast<std::size_t>(threads)));
#pragma omp parallel num_threads(threads)
    {
        const int thread = omp_get_thread_num();
#pragma omp for schedule(dynamic, chunk)
        for (std::size_t i = 0; i < n; ++i)
            body(i, thread);
    }
}

} // namespace kvscope::kernels::cpu::detail
