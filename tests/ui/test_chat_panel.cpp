// The chat panel without an engine: the transcript follows its newest line,
// and a turn waiting in the engine's queue says what it waits for.
#include <QLabel>
#include <QScrollBar>
#include <QTextBrowser>
#include <QtTest>

#include "ui/chat/chat_panel.h"
#include "ui/chat/chat_tabs.h"

using namespace kvscope;
using namespace kvscope::ui;

namespace {

constexpr RequestId kRequest = 7;

// One sequence of a request tagged with `chat` (the app's client tag).
EngineSnapshot withSeq(SeqStatus status, std::optional<std::uint32_t> position, int chat = 1) {
    EngineSnapshot s;
    SeqSnapshot seq;
    seq.seq = 3;
    seq.request = kRequest;
    seq.client_tag = static_cast<std::uint64_t>(chat);
    seq.status = status;
    seq.queue_position = position;
    s.seqs.push_back(seq);
    return s;
}

} // namespace

class TestChatPanel : public QObject {
    Q_OBJECT
private slots:
    void transcriptFollowsTheNewestLine() {
        ChatPanel panel(1, Qt::red);
        panel.resize(400, 400);
        panel.show();
        QVERIFY(QTest::qWaitForWindowExposed(&panel));
        QScrollBar* bar = panel.findChild<QTextBrowser*>(QStringLiteral("transcript"))->verticalScrollBar();
        panel.submit(QStringLiteral("Tell me a long story"));
        for (int i = 0; i < 60; ++i)
            panel.appendText(QStringLiteral("Line %1 of the reply.\n").arg(i));
        QTRY_VERIFY(bar->maximum() > 0 && bar->value() == bar->maximum());
        bar->setValue(0); // the user reads from the top; the next text brings the view back
        panel.appendText(QStringLiteral("And then"));
        QTRY_COMPARE(bar->value(), bar->maximum());
        TurnStats stats;
        stats.chat = 1;
        stats.generated_tokens = 61;
        panel.finishTurn(stats);
        QTRY_COMPARE(bar->value(), bar->maximum());
    }

    void waitingTextSaysWhatTheTurnWaitsFor() {
        QCOMPARE(waitingText(withSeq(SeqStatus::Waiting, 0).seqs[0]), QStringLiteral("Waiting for KV blocks\u2026"));
        QCOMPARE(waitingText(withSeq(SeqStatus::Waiting, 1).seqs[0]), QStringLiteral("Queued behind 1 request\u2026"));
        QCOMPARE(waitingText(withSeq(SeqStatus::Waiting, 12).seqs[0]),
                 QStringLiteral("Queued behind 12 requests\u2026"));
        QVERIFY(waitingText(withSeq(SeqStatus::Swapped, std::nullopt).seqs[0]).contains(QStringLiteral("Preempted")));
        QVERIFY(waitingText(withSeq(SeqStatus::Running, std::nullopt).seqs[0]).isEmpty());
    }

    // The line shows while the chat's request waits, and goes with its first token.
    void aQueuedTurnShowsItsPlaceUntilItsFirstToken() {
        ChatTabs tabs;
        ChatPanel* panel = tabs.newChat();
        const int chat = panel->chat();
        auto* line = panel->findChild<QLabel*>(QStringLiteral("waiting"));
        tabs.show();
        tabs.showWaiting(withSeq(SeqStatus::Waiting, 4, chat));
        QVERIFY(panel->waitingLine().isEmpty()); // not busy: no turn of this chat in flight
        panel->submit(QStringLiteral("Hello"));
        tabs.showWaiting(withSeq(SeqStatus::Waiting, 4, chat));
        QCOMPARE(panel->waitingLine(), QStringLiteral("Queued behind 4 requests\u2026"));
        QVERIFY(line->isVisible());
        tabs.showWaiting(withSeq(SeqStatus::Waiting, 0, chat + 1));
        QVERIFY(panel->waitingLine().isEmpty()); // another chat's line is not this one's
        tabs.showWaiting(withSeq(SeqStatus::Waiting, 0, 0));
        QVERIFY(panel->waitingLine().isEmpty()); // nor a workload request's
        tabs.showWaiting(withSeq(SeqStatus::Waiting, 0, chat));
        QCOMPARE(panel->waitingLine(), QStringLiteral("Waiting for KV blocks\u2026"));
        panel->appendText(QStringLiteral("Hi"));
        QVERIFY(panel->waitingLine().isEmpty());
        QVERIFY(!line->isVisible());
    }
};

QTEST_MAIN(TestChatPanel)
#include "test_chat_panel.moc"
