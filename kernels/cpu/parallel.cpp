#include "kernels/cpu/parallel.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "kernels/cpu/cpu_topology.h"
#include "kernels/cpu/parallel_for.h"

namespace kvscope::kernels::cpu {
namespace {

void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

// Persistent workers that spin briefly between jobs, then sleep. A kernel
// call costs one hand-off to each worker and back (about 0.5 us between two
// cores of the 2-core VM), where entering an OpenMP region cost about 3 us;
// a decode step makes ~100 such calls.
class Pool {
public:
    ~Pool() {
        stop_.store(true);
        generation_.fetch_add(1);
        generation_.notify_all();
        for (std::thread& worker : workers_)
            worker.join();
    }

    void run(int threads, detail::ThreadJob job) {
        std::unique_lock lock(run_mutex_, std::try_to_lock);
        if (!lock.owns_lock()) { // another thread's kernel is using the pool
            job(0);
            return;
        }
        add_workers(threads - 1);
        job_ = &job;
        job_threads_ = threads;
        open_.store(true);
        generation_.fetch_add(1); // seq_cst: ordered against sleepers_ below
        if (sleepers_.load() > 0)
            generation_.notify_all();
        job(0);
        // All work is claimed now. Close the job, then wait only for workers
        // that entered it (see work()); late ones will find it closed.
        open_.store(false);
        while (active_.load(std::memory_order_acquire) != 0)
            cpu_relax();
    }

private:
    // Spin about this many pauses (~0.1-0.3 ms) before sleeping: long
    // enough to bridge the gaps between the kernel calls of a step.
    static constexpr int kSpins = 1 << 14;

    // Called before the job is published: a new worker starts from the
    // generation before it, so it cannot miss the job.
    void add_workers(int count) {
        while (static_cast<int>(workers_.size()) < count) {
            const int index = static_cast<int>(workers_.size()) + 1;
            workers_.emplace_back([this, index, seen = generation_.load()] { work(index, seen); });
        }
    }

    void work(int index, std::uint64_t seen) {
        for (;;) {
            std::uint64_t now;
            for (int spin = 0; (now = generation_.load(std::memory_order_acquire)) == seen; ++spin) {
                if (spin < kSpins) {
                    cpu_relax();
                    continue;
                }
                sleepers_.fetch_add(1);
                generation_.wait(seen);
                sleepers_.fetch_sub(1);
            }
            seen = now;
            if (stop_.load())
                return;
            // Enter before looking at the job: either the caller sees this
            // worker active and waits for it, or the worker sees the job
            // closed (both are seq_cst, so one of the two must happen).
            active_.fetch_add(1);
            if (open_.load() && index < job_threads_)
                (*job_)(index);
            active_.fetch_sub(1, std::memory_order_release);
        }
    }

    std::mutex run_mutex_; // one job at a time
    std::vector<std::thread> workers_; // worker i runs job index i + 1
    const detail::ThreadJob* job_ = nullptr;
    int job_threads_ = 0;
    std::atomic<std::uint64_t> generation_{0};
    std::atomic<bool> open_{false}; // the job may still be entered
    std::atomic<int> active_{0};    // workers inside the job
    std::atomic<int> sleepers_{0};
    std::atomic<bool> stop_{false};
};

} // namespace

int available_cores() {
    static const int cores = default_thread_count();
    return cores;
}

int resolve_threads(int requested) { return requested > 0 ? requested : available_cores(); }

namespace detail {

std::span<StealableRange> stealable_ranges(int threads) {
    // Per calling thread: two engines' threads may run Even calls at once.
    thread_local std::unique_ptr<StealableRange[]> ranges;
    thread_local int size = 0;
    if (threads > size) {
        ranges = std::make_unique<StealableRange[]>(static_cast<std::size_t>(threads));
        size = threads;
    }
    return {ranges.get(), static_cast<std::size_t>(threads)};
}

void run_on_threads(int threads, ThreadJob job) {
    static Pool pool;
    pool.run(threads, job);
}

} // namespace detail
} // namespace kvscope::kernels::cpu
