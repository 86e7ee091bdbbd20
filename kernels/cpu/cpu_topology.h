// How many threads the kernels run by default, from what the operating
// system says about the CPU (issue 35, "portable by construction"). The OS
// calls behind it (sched_getaffinity, sysctlbyname) are in this file's .cpp
// alone; std::thread::hardware_concurrency is the fallback everywhere.
#pragma once

namespace kvscope::kernels::cpu {

// The default kernel thread count (a --threads of 0), at least 1:
//  - Linux: the CPUs in this process's affinity mask (sched_getaffinity),
//    so taskset, numactl and cpusets are honoured;
//  - macOS: the performance cores (sysctl hw.perflevel0.physicalcpu):
//    a matmul split evenly across performance and efficiency cores waits
//    for the slow ones; Intel Macs have no such key;
//  - else, or where the call fails: hardware_thread_count().
// Read each time it is called (parallel.cpp keeps the first answer).
int default_thread_count();

namespace detail {

// std::thread::hardware_concurrency(), or 1 where it is not known (it may
// return 0): the fallback of default_thread_count.
int hardware_thread_count();

} // namespace detail

} // namespace kvscope::kernels::cpu
