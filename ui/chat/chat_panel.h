#pragma once

#include <string>
#include <vector>

#include <QColor>
#include <QWidget>

#include "engine/chat/reasoning_split.h"
#include "engine/engine_snapshot.h"
#include "engine/tokenizer/chat_template.h"
#include "ui/bridge/chat_turn.h"

class QDoubleSpinBox;
class QLabel;
class QLineEdit;
class QPlainTextEdit;
class QPushButton;
class QSpinBox;
class QTextBrowser;
class QTextCharFormat;
class QTextCursor;
class QUrl;

namespace kvscope::ui {

// One conversation: its transcript with text streaming into it, a system
// prompt, sampling controls, Send and Stop. It keeps the conversation and
// asks for turns; the engine answers through appendText and finishTurn.
//
// The transcript follows the newest line as text arrives. Its headings,
// notes, reasoning and errors take the palette's colours, again after
// every theme change. While a turn
// waits in the engine's queue, a line under the transcript says what for.
//
// A reasoning model's reasoning (setReasoningMode: gpt-oss's analysis
// channel, a <think> block) streams in dimmed under a "Reasoning" link above
// the answer; when the turn ends it folds into that link ("Reasoning · N
// words"), which shows and hides it again. History keeps the answer as the
// assistant's content and the reasoning apart (ChatMessage::reasoning).
//
// Object names for tests: systemPrompt, transcript, waiting, input, send,
// stop, temperature, topP, topK, maxTokens, seed.
class ChatPanel : public QWidget {
    Q_OBJECT
public:
    ChatPanel(int chat, QColor color, QWidget* parent = nullptr);

    int chat() const { return chat_; }
    QColor color() const { return color_; }
    bool busy() const { return busy_; }
    QString transcriptText() const;
    const std::vector<ChatMessage>& history() const { return history_; }

    void setSystemPrompt(const QString& text);
    // What the turn in flight waits for (waitingText); empty hides the line.
    void setWaiting(const QString& text);
    QString waitingLine() const;
    // Tells the user that the model has no known chat template.
    void setTemplateNote(const QString& note);
    // How the model's replies carry reasoning; from the next turn on.
    void setReasoningMode(ReasoningMode mode) { reasoningMode_ = mode; }
    // Whether the reasoning of finished reply `n` (0: the first with any) is shown.
    bool reasoningShown(int n) const;
    // Shows or hides it, as its link does.
    void toggleReasoning(int n);
    // Sends `text` as the next user message (what Send does with the input).
    void submit(const QString& text);
    void stop();

public slots:
    void appendText(const QString& text);
    void finishTurn(const kvscope::ui::TurnStats& stats);

protected:
    void changeEvent(QEvent* event) override;

signals:
    void submitRequested(const kvscope::ui::ChatTurn& turn);
    void stopRequested(int chat);
    void busyChanged(bool busy);

private:
    QWidget* buildSamplingRow();
    RequestParams requestParams() const;
    void sendInput();
    void setBusy(bool busy);
    // Text that takes a colour of the palette, in the light or the dark theme.
    // Chat: the chat's colour, made readable on the palette's Base.
    enum class Ink { Text = 1, Chat, Note, Dimmed, Error };
    QColor inkColour(Ink ink) const;
    // Gives `format` the ink's colour, and remembers the ink for recolourTranscript.
    void inked(QTextCharFormat& format, Ink ink) const;
    void recolourTranscript();
    void appendHeading(const QString& who, Ink ink);
    void scrollToNewest();
    // The reply streaming in, drawn again from replyStart_ on: its reasoning
    // (reasoning `n`, its text shown or not) and its answer.
    void drawReply(int n, bool shown);
    // Reply `n`'s reasoning link and, when `shown`, its text, at `cursor`.
    void insertReasoning(QTextCursor& cursor, int n, bool shown) const;
    QColor dimmed() const;
    void onAnchor(const QUrl& url);

    struct Reasoning {
        QString text;
        bool shown = false;
    };

    int chat_;
    QColor color_;
    std::vector<ChatMessage> history_; // user and assistant turns, without the system prompt
    ReasoningMode reasoningMode_;
    ReasoningSplitter split_;          // the reply streaming in, into its two parts
    ReasoningText reply_;              // what it has shown of each
    int replyStart_ = 0;               // where it starts in the transcript
    std::vector<Reasoning> reasonings_; // finished replies' reasoning, by link number
    bool busy_ = false;
    QLineEdit* systemPrompt_;
    QLabel* templateNote_;
    QTextBrowser* transcript_;
    QLabel* waiting_;
    QPlainTextEdit* input_;
    QPushButton* send_;
    QPushButton* stop_;
    QDoubleSpinBox* temperature_;
    QDoubleSpinBox* topP_;
    QSpinBox* topK_;
    QSpinBox* maxTokens_;
    QSpinBox* seed_;
};

// The text under a finished reply: "42 tokens · 310.5 tok/s · first token 12 ms · stop".
QString turnStatsLine(const TurnStats& stats);
// What a turn's sequence waits for: "Waiting for KV blocks..." at the head
// of the queue, "Queued behind 3 requests..." behind others, "Preempted:
// waiting for KV blocks..." when swapped out; empty while it runs.
QString waitingText(const SeqSnapshot& seq);

} // namespace kvscope::ui
