// tests/support: how much memory a process holds, for the tests that check
// memory comes back or is not doubled. The one file in tests/ that reads
// /proc (cmake/check_platform_calls.cmake): Linux's /proc gives the current,
// peak and per-mapping resident sizes; elsewhere the POSIX fallback is
// getrusage's peak (ru_maxrss), and a measurement with no fallback is
// std::nullopt, which a test turns into a QSKIP naming what is missing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <optional>
#include <string>

#include <sys/resource.h>
#include <sys/types.h>

namespace kvscope::test {

namespace detail {

// The value of a "Name:   N kB" line of /proc/<process>/status, in bytes.
inline std::optional<std::size_t> proc_status_bytes(const std::string& process, const std::string& field) {
    std::ifstream in("/proc/" + process + "/status");
    for (std::string line; std::getline(in, line);)
        if (line.starts_with(field + ":"))
            return static_cast<std::size_t>(std::stoull(line.substr(field.size() + 1))) * 1024;
    return std::nullopt;
}

} // namespace detail

// Bytes this process has resident now (Linux: VmRSS). nullopt elsewhere:
// POSIX has no call for it.
inline std::optional<std::size_t> resident_bytes() { return detail::proc_status_bytes("self", "VmRSS"); }

// The same for another process (nullopt also when it does not exist).
inline std::optional<std::size_t> resident_bytes_of(pid_t pid) {
    return detail::proc_status_bytes(std::to_string(pid), "VmRSS");
}

// The peak of this process's resident memory, from getrusage (POSIX): since
// the process started, never reset. ru_maxrss is in KiB on Linux and the
// BSDs but in bytes on macOS.
inline std::size_t peak_resident_bytes_since_start() {
    rusage usage{};
    ::getrusage(RUSAGE_SELF, &usage);
#if defined(__APPLE__)
    return static_cast<std::size_t>(usage.ru_maxrss);
#else
    return static_cast<std::size_t>(usage.ru_maxrss) * 1024;
#endif
}

// The peak of this process's resident memory while `run` ran, as a bound:
// `at_most` is never below it; `exact` says it is the run's own peak.
// Linux resets the peak first ("5" into /proc/self/clear_refs sets VmHWM
// to VmRSS) and reads VmHWM after: exact. Elsewhere getrusage's peak since
// the start: exact when it rose during the run, else only a bound (an
// earlier peak was higher), which a test comparing with a limit must call
// inconclusive when it is over the limit.
struct PeakResident {
    std::size_t at_most = 0;
    bool exact = false;
};
namespace detail {

// peak_resident_during's fallback: getrusage's peak before and after.
template <class Run>
PeakResident peak_resident_during_by_rusage(Run&& run) {
    const std::size_t before = peak_resident_bytes_since_start();
    run();
    const std::size_t after = peak_resident_bytes_since_start();
    return {after, after > before};
}

} // namespace detail

template <class Run>
PeakResident peak_resident_during(Run&& run) {
    std::ofstream clear("/proc/self/clear_refs");
    clear << "5";
    clear.flush();
    if (!clear.good() || !detail::proc_status_bytes("self", "VmHWM"))
        return detail::peak_resident_during_by_rusage(run);
    run();
    return {*detail::proc_status_bytes("self", "VmHWM"), true};
}

// Resident bytes of the one mapping that holds `p` (Linux: smaps' Rss).
// nullopt elsewhere (macOS would need Mach's vm_region calls).
inline std::optional<std::size_t> mapping_resident_bytes(const void* p) {
    std::ifstream smaps("/proc/self/smaps");
    if (!smaps)
        return std::nullopt;
    const auto at = reinterpret_cast<std::uintptr_t>(p);
    bool inside = false;
    for (std::string line; std::getline(smaps, line);) {
        unsigned long long lo = 0, hi = 0;
        if (std::sscanf(line.c_str(), "%llx-%llx ", &lo, &hi) == 2)
            inside = lo <= at && at < hi;
        else if (inside && line.starts_with("Rss:"))
            return static_cast<std::size_t>(std::stoull(line.substr(4))) * 1024;
    }
    return std::nullopt;
}

} // namespace kvscope::test
