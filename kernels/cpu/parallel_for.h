// Internal: the one loop shape the kernels parallelize, on the kernels' own
// thread pool (parallel.cpp).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>

namespace kvscope::kernels::cpu::detail {

// A non-owning reference to a callable taking the thread index.
class ThreadJob {
public:
    template <typename F>
    explicit ThreadJob(F& f)
        : object_(&f), call_([](void* object, int thread) { (*static_cast<F*>(object))(thread); }) {}
    void operator()(int thread) const { call_(object_, thread); }

private:
    void* object_;
    void (*call_)(void*, int);
};

// Runs job(t) on threads t in [0, threads), t = 0 being the calling thread,
// and returns when every started job has finished. A worker the OS has not
// scheduled by the time the caller's job(0) returns is not waited for: jobs
// must claim their work from a shared counter (parallel_for does), so that
// job(0) alone completes everything if need be. When another thread is
// using the pool, job(0) runs alone.
void run_on_threads(int threads, ThreadJob job);

enum class Schedule {
    // One contiguous range per thread: for memory-bound streams (matvec
    // rows). Measured: 20-35% more bandwidth than handing out chunks,
    // because each thread's hardware prefetcher follows one long stream.
    Even,
    // About 8 parts per thread, taken as threads finish: for items of
    // uneven cost (causal attention) or compute-bound tiles.
    Dynamic,
};

// Calls body(i, thread) for every i in [0, n), where thread < threads names
// the calling thread (for per-thread scratch). With threads <= 1 the loop
// runs inline.
//
// [0, n) is cut into parts (one per thread for Even, about 8 per thread for
// Dynamic) that threads claim in order as they arrive: a thread the OS
// preempts or starts late does not hold the others up, they take its part.
template <typename Body>
void parallel_for(std::size_t n, int threads, Schedule schedule, Body&& body) {
    threads = static_cast<int>(std::min<std::size_t>(static_cast<std::size_t>(std::max(threads, 1)), n));
    if (threads <= 1) {
        for (std::size_t i = 0; i < n; ++i)
            body(i, 0);
        return;
    }
    const auto count = static_cast<std::size_t>(threads);
    const std::size_t parts = schedule == Schedule::Even ? count : std::min(n, 8 * count);
    std::atomic<std::size_t> next{0};
    auto job = [&](int thread) {
        for (std::size_t p; (p = next.fetch_add(1, std::memory_order_relaxed)) < parts;)
            for (std::size_t i = n * p / parts; i < n * (p + 1) / parts; ++i)
                body(i, thread);
    };
    run_on_threads(threads, ThreadJob(job));
}

} // namespace kvscope::kernels::cpu::detail
