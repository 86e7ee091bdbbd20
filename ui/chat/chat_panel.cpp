#include "ui/chat/chat_panel.h"

#include <algorithm>

#include <QDoubleSpinBox>
#include <QEvent>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QKeySequence>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QScrollBar>
#include <QShortcut>
#include <QSpinBox>
#include <QRegularExpression>
#include <QTextBlock>
#include <QTextBrowser>
#include <QTextCursor>
#include <QUrl>
#include <QVBoxLayout>

#include "engine/chat/chat_session.h"
#include "ui/look/text_status.h"

namespace kvscope::ui {
namespace {

// The link and text of a reply's reasoning carry its number, so that its
// link can find what to show or hide.
constexpr int kReasoningNumber = QTextFormat::UserProperty + 1;
const QString kReasoningScheme = QStringLiteral("reasoning");
// Which of the palette's colours a run of transcript text takes (a
// ChatPanel::Ink), kept on its format: a theme change re-colours the text
// written before it.
constexpr int kInk = QTextFormat::UserProperty + 2;

int wordCount(const QString& text) {
    static const QRegularExpression space(QStringLiteral("\\s+"));
    return static_cast<int>(text.split(space, Qt::SkipEmptyParts).size());
}

QString finishWord(FinishReason reason) {
    switch (reason) {
    case FinishReason::Stop: return QObject::tr("stopped by the model");
    case FinishReason::Length: return QObject::tr("token limit");
    case FinishReason::Abort: return QObject::tr("stopped by you");
    case FinishReason::Error: return QObject::tr("error");
    }
    return {};
}

} // namespace

QString turnStatsLine(const TurnStats& stats) {
    QStringList parts;
    parts << QObject::tr("%1 prompt + %2 new tokens").arg(stats.prompt_tokens).arg(stats.generated_tokens);
    if (stats.generated_tokens > 1)
        parts << QObject::tr("%1 tok/s").arg(stats.tokens_per_s(), 0, 'f', 1);
    if (stats.generated_tokens > 0)
        parts << QObject::tr("first token %1 ms after sending").arg(stats.ttft_s * 1000, 0, 'f', 0);
    parts << finishWord(stats.finish);
    return parts.join(QStringLiteral(" \u00b7 "));
}

QString waitingText(const SeqSnapshot& seq) {
    switch (seq.status) {
    case SeqStatus::Running: return {};
    case SeqStatus::Swapped: return QObject::tr("Preempted: waiting for KV blocks\u2026");
    case SeqStatus::Waiting: break;
    }
    const std::uint32_t ahead = seq.queue_position.value_or(0);
    if (ahead == 0)
        return QObject::tr("Waiting for KV blocks\u2026");
    return ahead == 1 ? QObject::tr("Queued behind 1 request\u2026")
                      : QObject::tr("Queued behind %1 requests\u2026").arg(ahead);
}

ChatPanel::ChatPanel(int chat, QColor color, QWidget* parent)
    : QWidget(parent),
      chat_(chat),
      color_(color),
      systemPrompt_(new QLineEdit),
      templateNote_(new QLabel),
      transcript_(new QTextBrowser),
      waiting_(new QLabel),
      input_(new QPlainTextEdit),
      send_(new QPushButton(tr("Send"))),
      stop_(new QPushButton(tr("Stop"))),
      temperature_(new QDoubleSpinBox),
      topP_(new QDoubleSpinBox),
      topK_(new QSpinBox),
      maxTokens_(new QSpinBox),
      seed_(new QSpinBox) {
    systemPrompt_->setObjectName(QStringLiteral("systemPrompt"));
    systemPrompt_->setPlaceholderText(tr("System prompt (chats with the same one share its KV blocks)"));
    systemPrompt_->setClearButtonEnabled(true);
    templateNote_->setWordWrap(true);
    templateNote_->setVisible(false);
    transcript_->setObjectName(QStringLiteral("transcript"));
    transcript_->setOpenLinks(false);
    waiting_->setObjectName(QStringLiteral("waiting"));
    waiting_->setVisible(false);
    input_->setObjectName(QStringLiteral("input"));
    input_->setPlaceholderText(tr("Message (Ctrl+Enter sends)"));
    // Three lines to write in; every other pixel of height goes to the
    // transcript, which is what a short window must keep readable.
    input_->setFixedHeight(3 * input_->fontMetrics().lineSpacing() + 2 * input_->frameWidth() + 8);
    send_->setObjectName(QStringLiteral("send"));
    send_->setToolTip(tr("Send (Ctrl+Enter)"));
    stop_->setObjectName(QStringLiteral("stop"));
    stop_->setToolTip(tr("Stop generating (Esc)"));
    stop_->setEnabled(false);

    auto* buttons = new QVBoxLayout;
    buttons->addWidget(send_);
    buttons->addWidget(stop_);
    buttons->addStretch();
    auto* inputRow = new QHBoxLayout;
    inputRow->addWidget(input_, 1);
    inputRow->addLayout(buttons);

    auto* layout = new QVBoxLayout(this);
    layout->addWidget(systemPrompt_);
    layout->addWidget(templateNote_);
    layout->addWidget(transcript_, 1);
    layout->addWidget(waiting_);
    layout->addWidget(buildSamplingRow());
    layout->addLayout(inputRow);

    // The document lays out new text after it is inserted: follow it there too.
    connect(transcript_->verticalScrollBar(), &QScrollBar::rangeChanged, this, &ChatPanel::scrollToNewest);
    connect(transcript_, &QTextBrowser::anchorClicked, this, &ChatPanel::onAnchor);
    connect(send_, &QPushButton::clicked, this, &ChatPanel::sendInput);
    connect(stop_, &QPushButton::clicked, this, &ChatPanel::stop);
    auto* sendKey = new QShortcut(QKeySequence(Qt::CTRL | Qt::Key_Return), this);
    sendKey->setContext(Qt::WidgetWithChildrenShortcut);
    connect(sendKey, &QShortcut::activated, this, &ChatPanel::sendInput);
    auto* stopKey = new QShortcut(QKeySequence(Qt::Key_Escape), this);
    stopKey->setContext(Qt::WidgetWithChildrenShortcut);
    connect(stopKey, &QShortcut::activated, this, &ChatPanel::stop);
}

QWidget* ChatPanel::buildSamplingRow() {
    temperature_->setObjectName(QStringLiteral("temperature"));
    temperature_->setRange(0, 2);
    temperature_->setSingleStep(0.1);
    temperature_->setValue(0.7);
    temperature_->setToolTip(tr("0: greedy (always the most likely token)"));
    topP_->setObjectName(QStringLiteral("topP"));
    topP_->setRange(0.01, 1);
    topP_->setSingleStep(0.05);
    topP_->setValue(0.9);
    topK_->setObjectName(QStringLiteral("topK"));
    topK_->setRange(0, 1000);
    topK_->setValue(40);
    topK_->setSpecialValueText(tr("off"));
    maxTokens_->setObjectName(QStringLiteral("maxTokens"));
    maxTokens_->setRange(1, 32768);
    maxTokens_->setValue(256);
    seed_->setObjectName(QStringLiteral("seed"));
    seed_->setRange(0, 1 << 30);
    // Two rows, so that the chat stays narrow beside the block map.
    auto* row = new QWidget;
    auto* layout = new QGridLayout(row);
    layout->setContentsMargins(0, 0, 0, 0);
    const auto add = [&](int r, int c, const QString& label, QWidget* field) {
        layout->addWidget(new QLabel(label), r, 2 * c, Qt::AlignRight);
        layout->addWidget(field, r, 2 * c + 1);
    };
    add(0, 0, tr("Temperature"), temperature_);
    add(0, 1, tr("Top-p"), topP_);
    add(0, 2, tr("Top-k"), topK_);
    add(1, 0, tr("Max tokens"), maxTokens_);
    add(1, 1, tr("Seed"), seed_);
    layout->setColumnStretch(6, 1);
    return row;
}

QString ChatPanel::transcriptText() const { return transcript_->toPlainText(); }

void ChatPanel::setSystemPrompt(const QString& text) { systemPrompt_->setText(text); }

void ChatPanel::setWaiting(const QString& text) {
    if (text == waiting_->text())
        return;
    waiting_->setText(text);
    waiting_->setVisible(!text.isEmpty());
}

QString ChatPanel::waitingLine() const { return waiting_->text(); }

// Whatever the user scrolled to, new text is where they look.
void ChatPanel::scrollToNewest() {
    QScrollBar* bar = transcript_->verticalScrollBar();
    bar->setValue(bar->maximum());
}

void ChatPanel::setTemplateNote(const QString& note) {
    templateNote_->setText(note);
    templateNote_->setVisible(!note.isEmpty());
}

RequestParams ChatPanel::requestParams() const {
    RequestParams p;
    p.sampling.temperature = static_cast<float>(temperature_->value());
    p.sampling.top_p = static_cast<float>(topP_->value());
    p.sampling.top_k = static_cast<std::uint32_t>(topK_->value());
    p.sampling.seed = static_cast<std::uint64_t>(seed_->value());
    p.max_new_tokens = static_cast<std::uint32_t>(maxTokens_->value());
    return p;
}

void ChatPanel::sendInput() {
    const QString text = input_->toPlainText().trimmed();
    if (text.isEmpty() || busy_)
        return;
    input_->clear();
    submit(text);
}

void ChatPanel::submit(const QString& text) {
    if (busy_)
        return;
    history_.push_back({"user", text.toStdString()});
    appendHeading(tr("You"), Ink::Text);
    QTextCursor cursor(transcript_->document());
    cursor.movePosition(QTextCursor::End);
    cursor.insertText(text);
    appendHeading(tr("Model"), Ink::Chat);
    scrollToNewest();
    split_ = ReasoningSplitter(reasoningMode_);
    reply_ = {};
    replyStart_ = transcript_->document()->characterCount() - 1;

    ChatTurn turn{chat_, {}, requestParams()};
    if (const QString system = systemPrompt_->text().trimmed(); !system.isEmpty())
        turn.messages.push_back({"system", system.toStdString()});
    turn.messages.insert(turn.messages.end(), history_.begin(), history_.end());
    setBusy(true);
    emit submitRequested(turn);
}

void ChatPanel::stop() {
    if (busy_)
        emit stopRequested(chat_);
}

void ChatPanel::appendHeading(const QString& who, Ink ink) {
    QTextCursor cursor(transcript_->document());
    cursor.movePosition(QTextCursor::End);
    if (!transcript_->document()->isEmpty())
        cursor.insertBlock();
    QTextCharFormat heading;
    heading.setFontWeight(QFont::Bold);
    inked(heading, ink);
    cursor.insertText(who, heading);
    cursor.insertBlock();
    cursor.setCharFormat(QTextCharFormat());
}

void ChatPanel::appendText(const QString& text) {
    const ReasoningText more = split_.push(text.toStdString());
    reply_ += more;
    if (reasoningMode_.format == ReasoningFormat::none) {
        // No reasoning to place above the answer: the text goes at the end.
        QTextCursor cursor(transcript_->document());
        cursor.movePosition(QTextCursor::End);
        cursor.insertText(QString::fromStdString(more.content), QTextCharFormat());
    } else if (!more.empty()) {
        drawReply(static_cast<int>(reasonings_.size()), true);
    }
    setWaiting({}); // the first token came
    scrollToNewest();
}

QColor ChatPanel::inkColour(Ink ink) const {
    switch (ink) {
    case Ink::Text: return palette().color(QPalette::Text);
    case Ink::Chat: return readableColour(color_, palette().color(QPalette::Base));
    case Ink::Note: return palette().color(QPalette::PlaceholderText);
    case Ink::Dimmed: return dimmed();
    case Ink::Error: return statusTextColour(TextStatus::Error, palette());
    }
    return {};
}

void ChatPanel::inked(QTextCharFormat& format, Ink ink) const {
    format.setProperty(kInk, static_cast<int>(ink));
    format.setForeground(inkColour(ink));
}

// Every run of text that took a palette colour takes the new palette's.
// The runs are found first: changing a format can merge fragments.
void ChatPanel::recolourTranscript() {
    struct Run {
        int begin, end;
        Ink ink;
    };
    std::vector<Run> runs;
    QTextDocument* document = transcript_->document();
    for (QTextBlock block = document->begin(); block.isValid(); block = block.next())
        for (auto it = block.begin(); !it.atEnd(); ++it)
            if (const QTextFragment f = it.fragment(); f.charFormat().hasProperty(kInk))
                runs.push_back({f.position(), f.position() + f.length(), static_cast<Ink>(f.charFormat().intProperty(kInk))});
    for (const Run& run : runs) {
        QTextCharFormat colour;
        colour.setForeground(inkColour(run.ink));
        QTextCursor cursor(document);
        cursor.setPosition(run.begin);
        cursor.setPosition(run.end, QTextCursor::KeepAnchor);
        cursor.mergeCharFormat(colour);
    }
}

void ChatPanel::changeEvent(QEvent* event) {
    QWidget::changeEvent(event);
    if (event->type() == QEvent::PaletteChange)
        recolourTranscript();
}

QColor ChatPanel::dimmed() const {
    // Between the text and its background: readable, and quieter than the answer, in either theme.
    const QColor text = palette().color(QPalette::Text);
    const QColor base = palette().color(QPalette::Base);
    return QColor::fromRgbF(0.6f * text.redF() + 0.4f * base.redF(), 0.6f * text.greenF() + 0.4f * base.greenF(),
                            0.6f * text.blueF() + 0.4f * base.blueF());
}

void ChatPanel::insertReasoning(QTextCursor& cursor, int n, bool shown) const {
    QTextCharFormat link;
    link.setAnchor(true);
    link.setAnchorHref(kReasoningScheme + QLatin1Char(':') + QString::number(n));
    inked(link, Ink::Dimmed);
    link.setFontPointSize(font().pointSizeF() * 0.85);
    link.setProperty(kReasoningNumber, n);
    const QString text = QString::fromStdString(reply_.reasoning);
    const QString& reasoning = n < static_cast<int>(reasonings_.size()) ? reasonings_[static_cast<std::size_t>(n)].text : text;
    const int words = wordCount(reasoning);
    cursor.insertText(shown         ? tr("\u25BE Reasoning")
                      : words == 1 ? tr("\u25B8 Reasoning \u00B7 1 word")
                                   : tr("\u25B8 Reasoning \u00B7 %1 words").arg(words),
                      link);
    if (!shown)
        return;
    QTextCharFormat thought;
    inked(thought, Ink::Dimmed);
    thought.setFontItalic(true);
    thought.setProperty(kReasoningNumber, n);
    cursor.insertBlock();
    cursor.insertText(reasoning, thought);
}

void ChatPanel::drawReply(int n, bool shown) {
    QTextCursor cursor(transcript_->document());
    cursor.setPosition(replyStart_);
    cursor.movePosition(QTextCursor::End, QTextCursor::KeepAnchor);
    cursor.removeSelectedText();
    if (!reply_.reasoning.empty()) {
        insertReasoning(cursor, n, shown);
        cursor.insertBlock();
    }
    cursor.insertText(QString::fromStdString(reply_.content), QTextCharFormat());
}

bool ChatPanel::reasoningShown(int n) const {
    return n >= 0 && n < static_cast<int>(reasonings_.size()) && reasonings_[static_cast<std::size_t>(n)].shown;
}

void ChatPanel::toggleReasoning(int n) {
    if (n < 0 || n >= static_cast<int>(reasonings_.size()))
        return; // the reply still streaming shows its reasoning until it ends
    int first = -1;
    int end = -1;
    for (QTextBlock block = transcript_->document()->begin(); block.isValid(); block = block.next())
        for (auto it = block.begin(); !it.atEnd(); ++it) {
            const QTextFragment f = it.fragment();
            const QTextCharFormat format = f.charFormat();
            if (format.hasProperty(kReasoningNumber) && format.intProperty(kReasoningNumber) == n) {
                first = first < 0 ? f.position() : first;
                end = f.position() + f.length();
            }
        }
    if (first < 0)
        return;
    Reasoning& r = reasonings_[static_cast<std::size_t>(n)];
    r.shown = !r.shown;
    QTextCursor cursor(transcript_->document());
    cursor.setPosition(first);
    cursor.setPosition(end, QTextCursor::KeepAnchor);
    cursor.removeSelectedText();
    insertReasoning(cursor, n, r.shown);
}

void ChatPanel::onAnchor(const QUrl& url) {
    if (url.scheme() == kReasoningScheme)
        toggleReasoning(url.path().toInt());
}

void ChatPanel::finishTurn(const TurnStats& stats) {
    reply_ += split_.finish();
    if (!reply_.reasoning.empty()) { // folded into its link, now that the answer is there
        reasonings_.push_back({QString::fromStdString(reply_.reasoning), false});
        drawReply(static_cast<int>(reasonings_.size()) - 1, false);
    } else if (reasoningMode_.format != ReasoningFormat::none) {
        drawReply(static_cast<int>(reasonings_.size()), false);
    }
    QTextCursor cursor(transcript_->document());
    cursor.movePosition(QTextCursor::End);
    cursor.insertBlock();
    QTextCharFormat note;
    inked(note, Ink::Note);
    note.setFontPointSize(font().pointSizeF() * 0.85);
    cursor.insertText(turnStatsLine(stats), note);
    if (stats.dropped_messages > 0) {
        // They went for good: the next turn starts from what this one kept.
        const auto dropped = std::min<std::size_t>(stats.dropped_messages, history_.size());
        history_.erase(history_.begin(), history_.begin() + static_cast<std::ptrdiff_t>(dropped));
        cursor.insertBlock();
        cursor.insertText(QString::fromStdString(dropped_messages_note(stats.dropped_messages)), note);
    }
    if (stats.reply_limit > 0) { // the same words as kvscope-cli chat and the server's kvscope_context
        cursor.insertBlock();
        cursor.insertText(QString::fromStdString(reply_limit_note(stats.reply_limit)), note);
    }
    if (stats.finish == FinishReason::Error) {
        QTextCharFormat error;
        inked(error, Ink::Error);
        cursor.insertBlock();
        cursor.insertText(tr("The engine refused this turn: %1").arg(QString::fromStdString(stats.error)), error);
        history_.pop_back(); // the user turn never happened; roles keep alternating
    } else {
        history_.push_back({"assistant", reply_.content, reply_.reasoning});
    }
    reply_ = {};
    setWaiting({});
    scrollToNewest();
    setBusy(false);
}

void ChatPanel::setBusy(bool busy) {
    busy_ = busy;
    send_->setEnabled(!busy);
    stop_->setEnabled(busy);
    emit busyChanged(busy);
}

} // namespace kvscope::ui

