#pragma once

// Header only: both kvscope_ui and kvscope_dashboards start such threads.
#include <QtGlobal>

#ifdef Q_OS_LINUX
#include <cerrno>

#include <sys/resource.h>
#else
#include <QThread>
#endif

namespace kvscope::ui {

// CFS gives a nice-10 thread about a tenth of a nice-0 one's share of a
// contended core: enough for the UI thread to win it, while a background
// compile still leaves the engine a share.
inline constexpr int kBackgroundNice = 10;

// Threads that compute for the window (the engines, the KV accuracy
// measurement) call this first: they then run below the UI thread's
// priority, so that when they keep every core busy the UI thread still gets
// one as soon as it has work, and a click, a key or a snapshot is answered
// within the window's latency budget (UiLatencyProbe). They lose nothing
// when the machine is otherwise idle. Threads the caller starts afterwards
// (the CPU kernels' worker pool, grown by the first caller that needs it)
// inherit the lower priority.
inline void lowerCurrentThreadPriority() {
#ifdef Q_OS_LINUX
    // Qt's thread priorities do nothing under Linux's default scheduling
    // policy; the nice value does, and on Linux it belongs to the thread
    // (who = 0: the calling thread). Only ever raised: lowering it back
    // would need privileges.
    errno = 0;
    const int nice = getpriority(PRIO_PROCESS, 0);
    if (errno == 0 && nice < kBackgroundNice)
        setpriority(PRIO_PROCESS, 0, kBackgroundNice);
#else
    QThread::currentThread()->setPriority(QThread::LowPriority);
#endif
}

} // namespace kvscope::ui
