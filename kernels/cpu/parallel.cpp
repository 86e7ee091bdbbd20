#include "kernels/cpu/parallel.h"

#include <atomic>

#include <omp.h>

namespace kvscope::kernels::cpu {
namespace {

std::atomic<int>& requested() {
    static std::atomic<int> n{0};
    return n;
}

} // namespace

void set_num_threads(int n) { requested().store(n > 0 ? n : 0, std::memory_order_relaxed); }

int num_threads() {
    const int n = requested().load(std::memory_order_relaxed);
    return n > 0 ? n : omp_get_num_procs();
}

} // namespace kvscope::kernels::cpu
