#pragma once

#include <QColor>
#include <QTabWidget>

#include "engine/chat/reasoning_split.h"
#include "engine/engine_snapshot.h"
#include "ui/chat/chat_palette.h"
#include "ui/bridge/chat_turn.h"

namespace kvscope::ui {

class ChatPanel;

// The chat tabs: every chat is its own sequence in the engine, so several
// can generate at once and share the KV pool. A tab's icon is the colour
// its blocks have on the block map.
class ChatTabs : public QTabWidget {
    Q_OBJECT
public:
    explicit ChatTabs(QWidget* parent = nullptr);

    // The colour of chat `chat` everywhere (tab, transcript, block map).
    static QColor colorOf(int chat);

    ChatPanel* newChat();
    void closeChat(int index);
    ChatPanel* current() const;
    ChatPanel* panel(int chat) const;
    // Shown in every chat (and new ones): how turns are rendered for this model.
    void setTemplateNote(const QString& note);
    // How this model's replies carry reasoning, for every chat (and new ones).
    void setReasoningMode(ReasoningMode mode);

    // Each busy chat's waiting line from the snapshot (ChatPanel::setWaiting):
    // `chats` says which requests are whose.
    void showWaiting(const EngineSnapshot& snapshot);

public slots:
    void appendText(int chat, const QString& text);
    void finishTurn(const kvscope::ui::TurnStats& stats);

signals:
    void submitRequested(const kvscope::ui::ChatTurn& turn);
    void stopRequested(int chat);

private:
    int nextChat_ = 1;
    QString templateNote_;
    ReasoningMode reasoningMode_;
};

} // namespace kvscope::ui
