// tests/support: how a test waits for something to happen. Tests wait on a
// condition (a signal spy's count, a sample's contents, a counter a fake
// server exposes, a line in a log), never on a fixed time; where Qt Test's
// QTRY_VERIFY / QTRY_COMPARE or QSignalSpy::wait fit a test function they are
// used directly, and everything else waits through wait_until() below, the
// one polling loop in tests/ (tests/engine/test_engine_service.cpp keeps
// its own for now). Its deadline is a deadlock guard, not a timing: it is
// generous so that a loaded CI machine or a sanitizer build never reaches
// it, and a test that reaches it fails (tests/README.md, "Waiting").
#pragma once

#include <chrono>
#include <thread>

#include <QCoreApplication>
#include <QDeadlineTimer>
#include <QSignalSpy>
#include <QThread>

namespace kvscope::test {

// How long a wait may take before the test calls it a deadlock.
inline constexpr std::chrono::milliseconds kPatience{60'000};

// True once `holds()` is true; false if `patience` passes first. Between
// tries, on the application's thread, the Qt events due are delivered
// (queued signals, timers, deferred deletes: what QTRY_VERIFY does), so a
// condition that needs the event loop comes true; then the thread sleeps
// a few milliseconds. Before returning true it has evaluated `holds` at
// least once, and every event posted before the call and due has run by
// the second evaluation.
template <typename Condition>
bool wait_until(Condition&& holds, std::chrono::milliseconds patience = kPatience) {
    const QDeadlineTimer deadline(patience);
    for (;;) {
        if (holds())
            return true;
        if (deadline.hasExpired())
            return false;
        if (const QCoreApplication* app = QCoreApplication::instance();
            app && app->thread() == QThread::currentThread()) {
            QCoreApplication::processEvents(QEventLoop::AllEvents);
            QCoreApplication::sendPostedEvents(nullptr, QEvent::DeferredDelete);
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
}

// Whether `spy` holds `count` signals before `patience` passes.
// QSignalSpy::wait() would miss a signal another thread emits before wait()
// starts, so the count is what is waited on.
inline bool arrives(const QSignalSpy& spy, qsizetype count, std::chrono::milliseconds patience = kPatience) {
    return wait_until([&] { return spy.size() >= count; }, patience);
}

} // namespace kvscope::test
