#include "ui/chat/chat_tabs.h"

#include <map>

#include <QPixmap>
#include <QToolButton>

#include "ui/chat/chat_panel.h"
#include "ui/blockmap/sequence_palette.h"

namespace kvscope::ui {
namespace {

QIcon swatch(const QColor& color) {
    QPixmap pixmap(12, 12);
    pixmap.fill(color);
    return QIcon(pixmap);
}

} // namespace

ChatTabs::ChatTabs(QWidget* parent) : QTabWidget(parent) {
    setDocumentMode(true);
    setTabsClosable(true);
    setMovable(true);
    auto* add = new QToolButton;
    add->setObjectName(QStringLiteral("newChat"));
    add->setText(QStringLiteral("+"));
    add->setToolTip(tr("New chat (Ctrl+T)"));
    add->setAutoRaise(true);
    setCornerWidget(add, Qt::TopRightCorner);
    connect(add, &QToolButton::clicked, this, &ChatTabs::newChat);
    connect(this, &QTabWidget::tabCloseRequested, this, &ChatTabs::closeChat);
}

QColor ChatTabs::colorOf(int chat) {
    // Chat 1 takes the palette's first colour, and so on.
    return QColor::fromRgb(SequencePalette::defaultColor(static_cast<SeqId>(chat - 1)));
}

ChatPanel* ChatTabs::newChat() {
    const int chat = nextChat_++;
    auto* panel = new ChatPanel(chat, colorOf(chat));
    panel->setTemplateNote(templateNote_);
    panel->setReasoningMode(reasoningMode_);
    connect(panel, &ChatPanel::submitRequested, this, &ChatTabs::submitRequested);
    connect(panel, &ChatPanel::stopRequested, this, &ChatTabs::stopRequested);
    setCurrentIndex(addTab(panel, swatch(panel->color()), tr("Chat %1").arg(chat)));
    return panel;
}

void ChatTabs::closeChat(int index) {
    auto* panel = qobject_cast<ChatPanel*>(widget(index));
    if (!panel)
        return;
    panel->stop();
    removeTab(index);
    panel->deleteLater();
    if (count() == 0)
        newChat();
}

ChatPanel* ChatTabs::current() const { return qobject_cast<ChatPanel*>(currentWidget()); }

ChatPanel* ChatTabs::panel(int chat) const {
    for (int i = 0; i < count(); ++i)
        if (auto* p = qobject_cast<ChatPanel*>(widget(i)); p && p->chat() == chat)
            return p;
    return nullptr;
}

void ChatTabs::setTemplateNote(const QString& note) {
    templateNote_ = note;
    for (int i = 0; i < count(); ++i)
        if (auto* p = qobject_cast<ChatPanel*>(widget(i)))
            p->setTemplateNote(note);
}

void ChatTabs::setReasoningMode(ReasoningMode mode) {
    reasoningMode_ = mode;
    for (int i = 0; i < count(); ++i)
        if (auto* p = qobject_cast<ChatPanel*>(widget(i)))
            p->setReasoningMode(mode);
}

void ChatTabs::showWaiting(const EngineSnapshot& snapshot) {
    std::map<int, QString> waiting; // by chat
    for (const SeqSnapshot& seq : snapshot.seqs)
        if (const int chat = chatOf(seq.client_tag); chat && seq.index == 0)
            waiting[chat] = waitingText(seq);
    for (int i = 0; i < count(); ++i)
        if (auto* p = qobject_cast<ChatPanel*>(widget(i)))
            p->setWaiting(p->busy() ? waiting[p->chat()] : QString());
}

void ChatTabs::appendText(int chat, const QString& text) {
    if (ChatPanel* p = panel(chat))
        p->appendText(text);
}

void ChatTabs::finishTurn(const TurnStats& stats) {
    if (ChatPanel* p = panel(stats.chat))
        p->finishTurn(stats);
}

} // namespace kvscope::ui
