// app/cli: SIGINT and SIGTERM for commands that run until stopped (serve,
// top). The signals are blocked in every thread (threads inherit the mask,
// so block_stop_signals() runs before any thread starts) and taken by the
// main thread with sigwait: no handler runs, and the main thread does the
// stopping in its own time.
#pragma once

#include <chrono>
#include <csignal>
#include <ctime>

namespace kvscope::cli {

inline sigset_t block_stop_signals() {
    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, SIGINT);
    sigaddset(&signals, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &signals, nullptr);
    return signals;
}

// Waits for one of them; returns which.
inline int wait_for_stop_signal(const sigset_t& signals) {
    int signal = 0;
    while (sigwait(&signals, &signal) != 0) {
    }
    return signal;
}

// Waits `interval`; true when one of them came first.
inline bool stopped_within(const sigset_t& signals, std::chrono::nanoseconds interval) {
    const auto s = std::chrono::duration_cast<std::chrono::seconds>(interval);
    const timespec wait{.tv_sec = static_cast<time_t>(s.count()), .tv_nsec = static_cast<long>((interval - s).count())};
    return sigtimedwait(&signals, nullptr, &wait) > 0;
}

} // namespace kvscope::cli
