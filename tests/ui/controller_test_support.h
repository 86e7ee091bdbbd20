// What the EngineController tests share: a chat turn to submit and a wait
// for queued signals that cannot miss one emitted before it starts.
#pragma once

#include <QDeadlineTimer>
#include <QSignalSpy>
#include <QtTest>

#include "ui/bridge/engine_controller.h"

namespace kvscope::ui::test {

inline constexpr int kWaitMs = 60'000;

inline ChatTurn userTurn(int chat, const char* text, std::uint32_t maxTokens) {
    ChatTurn turn;
    turn.chat = chat;
    turn.messages = {{"user", text}};
    turn.params.max_new_tokens = maxTokens;
    return turn; // greedy: temperature 0 by default
}

// Whether `spy` holds `count` signals within the time. QSignalSpy::wait()
// would miss a signal the engine thread emits before wait() starts, so the
// count is polled instead.
inline bool arrives(const QSignalSpy& spy, qsizetype count, int ms = kWaitMs) {
    QDeadlineTimer deadline(ms);
    while (spy.size() < count && !deadline.hasExpired())
        QTest::qWait(5);
    return spy.size() >= count;
}

inline TurnStats lastStats(const QSignalSpy& spy) { return spy.last().at(0).value<TurnStats>(); }

} // namespace kvscope::ui::test
