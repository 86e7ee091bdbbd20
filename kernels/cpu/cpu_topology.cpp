#include "kernels/cpu/cpu_topology.h"

#include <algorithm>
#include <optional>
#include <thread>

#if defined(__linux__)
#include <sched.h>
#elif defined(__APPLE__)
#include <sys/sysctl.h>
#include <sys/types.h>
#endif

namespace kvscope::kernels::cpu {
namespace {

// What the OS says this process should use; nullopt where it says nothing.
std::optional<int> os_thread_count() {
#if defined(__linux__)
    cpu_set_t mask;
    CPU_ZERO(&mask);
    if (::sched_getaffinity(0, sizeof mask, &mask) != 0) // more than CPU_SETSIZE CPUs: EINVAL
        return std::nullopt;
    return CPU_COUNT(&mask);
#elif defined(__APPLE__)
    int cores = 0;
    std::size_t size = sizeof cores;
    if (::sysctlbyname("hw.perflevel0.physicalcpu", &cores, &size, nullptr, 0) != 0)
        return std::nullopt;
    return cores;
#else
    return std::nullopt;
#endif
}

} // namespace

int default_thread_count() {
    const std::optional<int> os = os_thread_count();
    return os && *os > 0 ? *os : detail::hardware_thread_count();
}

namespace detail {

int hardware_thread_count() { return static_cast<int>(std::max(1u, std::thread::hardware_concurrency())); }

} // namespace detail

} // namespace kvscope::kernels::cpu
