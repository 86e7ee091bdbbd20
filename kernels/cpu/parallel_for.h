// Internal: the one loop shape the kernels parallelize, on the kernels' own
// thread pool (parallel.cpp).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <span>

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
    // A thread done with its range takes chunks from the far end of
    // another's (work stealing), so one slow thread holds nobody up for
    // more than a chunk and the owner's stream stays unbroken.
    Even,
    // About 8 parts per thread, taken as threads finish: for items of
    // uneven cost (causal attention) or compute-bound tiles.
    Dynamic,
};

// A range [front, back) of indices that its owner takes from the front
// and other threads take from the back, both in chunks, one atomic word
// for both ends so that a chunk goes to exactly one thread.
class StealableRange {
public:
    void reset(std::size_t begin, std::size_t end, std::size_t chunk) {
        base_ = begin;
        chunk_ = chunk;
        ends_.store(pack(0, end - begin), std::memory_order_relaxed);
    }
    // The next chunk from the front (owner) or the back (thief); false when
    // the range is empty.
    bool take_front(std::size_t& begin, std::size_t& end) { return take(true, begin, end); }
    bool take_back(std::size_t& begin, std::size_t& end) { return take(false, begin, end); }

private:
    static std::uint64_t pack(std::uint64_t front, std::uint64_t back) { return front | back << 32; }

    bool take(bool front_end, std::size_t& begin, std::size_t& end) {
        std::uint64_t ends = ends_.load(std::memory_order_relaxed);
        for (;;) {
            const std::uint64_t front = ends & 0xFFFFFFFFu, back = ends >> 32;
            if (front >= back)
                return false;
            const std::uint64_t mid = front_end ? std::min(front + chunk_, back) : back - std::min(chunk_, back - front);
            const std::uint64_t next = front_end ? pack(mid, back) : pack(front, mid);
            if (ends_.compare_exchange_weak(ends, next, std::memory_order_relaxed)) {
                begin = base_ + (front_end ? front : mid);
                end = base_ + (front_end ? mid : back);
                return true;
            }
        }
    }

    std::size_t base_ = 0, chunk_ = 1;
    alignas(64) std::atomic<std::uint64_t> ends_{0}; // its own cache line: owners and thieves write it
};

// The ranges of one Even call, one per thread (reused by the calling
// thread from call to call: no allocation per kernel call).
std::span<StealableRange> stealable_ranges(int threads);

// Calls body(i, thread) for every i in [0, n), where thread < threads names
// the calling thread (for per-thread scratch). With threads <= 1 the loop
// runs inline.
//
// Even: thread t owns the t-th of `threads` equal ranges and walks it in
// chunks of 1/16 from the front; then it takes chunks from the back of the
// others' ranges. Dynamic: [0, n) is cut into about 8 parts per thread,
// claimed in order as threads arrive. Either way a thread the OS preempts
// or starts late does not hold the others up: they take its work.
template <typename Body>
void parallel_for(std::size_t n, int threads, Schedule schedule, Body&& body) {
    threads = static_cast<int>(std::min<std::size_t>(static_cast<std::size_t>(std::max(threads, 1)), n));
    if (threads <= 1) {
        for (std::size_t i = 0; i < n; ++i)
            body(i, 0);
        return;
    }
    const auto count = static_cast<std::size_t>(threads);
    if (schedule == Schedule::Even && n <= 0xFFFFFFFFu) { // StealableRange packs 32-bit ends
        const std::span<StealableRange> ranges = stealable_ranges(threads);
        for (std::size_t t = 0; t < count; ++t) {
            const std::size_t begin = n * t / count, end = n * (t + 1) / count;
            ranges[t].reset(begin, end, std::max<std::size_t>(1, (end - begin) / 16));
        }
        auto job = [&](int thread) {
            const auto own = static_cast<std::size_t>(thread);
            std::size_t begin, end;
            for (std::size_t k = 0; k < count; ++k) {
                StealableRange& range = ranges[(own + k) % count];
                while (k == 0 ? range.take_front(begin, end) : range.take_back(begin, end))
                    for (std::size_t i = begin; i < end; ++i)
                        body(i, thread);
            }
        };
        run_on_threads(threads, ThreadJob(job));
        return;
    }
    const std::size_t parts = std::min(n, 8 * count);
    std::atomic<std::size_t> next{0};
    auto job = [&](int thread) {
        for (std::size_t p; (p = next.fetch_add(1, std::memory_order_relaxed)) < parts;)
            for (std::size_t i = n * p / parts; i < n * (p + 1) / parts; ++i)
                body(i, thread);
    };
    run_on_threads(threads, ThreadJob(job));
}

} // namespace kvscope::kernels::cpu::detail
