// What the EngineController tests share: a chat turn to submit, and the
// wait for queued signals that cannot miss one emitted before it starts
// (kvscope::test::arrives, tests/support/wait.h).
#pragma once

#include <QSignalSpy>
#include <QtTest>

#include "support/wait.h"
#include "ui/bridge/engine_controller.h"

namespace kvscope::ui::test {

using kvscope::test::arrives;

// QTRY_*_WITH_TIMEOUT's deadlock guard, the same as arrives()'.
inline constexpr int kWaitMs = static_cast<int>(kvscope::test::kPatience.count());

inline ChatTurn userTurn(int chat, const char* text, std::uint32_t maxTokens) {
    ChatTurn turn;
    turn.chat = chat;
    turn.messages = {{"user", text}};
    turn.params.max_new_tokens = maxTokens;
    return turn; // greedy: temperature 0 by default
}

inline TurnStats lastStats(const QSignalSpy& spy) { return spy.last().at(0).value<TurnStats>(); }

} // namespace kvscope::ui::test
