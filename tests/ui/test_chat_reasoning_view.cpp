// The chat shows a reasoning model's reasoning apart from its answer,
// without an engine: harmony text arriving with its markers cut between
// pieces streams its analysis dimmed under a "Reasoning" link above the
// answer, folds into the link when the turn ends, and the link shows and
// hides it again; history keeps the answer as content and the reasoning
// apart. In the light and the dark palette the reasoning stays readable
// and quieter than the answer. A model without reasoning: the text as it came.
#include <QApplication>
#include <QPalette>
#include <QTextBlock>
#include <QTextBrowser>
#include <QtTest>

#include "ui/chat/chat_panel.h"

using namespace kvscope;
using namespace kvscope::ui;

namespace {

TurnStats stopped() {
    TurnStats stats;
    stats.chat = 1;
    stats.generated_tokens = 12;
    return stats;
}

// The colour the transcript gives the first character of `text`.
QColor colourOf(const ChatPanel& panel, const QString& text) {
    const QTextDocument* doc = panel.findChild<QTextBrowser*>(QStringLiteral("transcript"))->document();
    const QTextCursor found = doc->find(text);
    if (found.isNull())
        return {};
    QTextCursor at(const_cast<QTextDocument*>(doc));
    at.setPosition(found.selectionStart() + 1);
    return at.charFormat().foreground().color();
}

// WCAG's contrast ratio of two colours.
double contrast(const QColor& a, const QColor& b) {
    const auto luminance = [](const QColor& c) {
        const auto channel = [](double v) { return v <= 0.03928 ? v / 12.92 : std::pow((v + 0.055) / 1.055, 2.4); };
        return 0.2126 * channel(c.redF()) + 0.7152 * channel(c.greenF()) + 0.0722 * channel(c.blueF());
    };
    const double la = luminance(a), lb = luminance(b);
    return (std::max(la, lb) + 0.05) / (std::min(la, lb) + 0.05);
}

QPalette darkPalette() {
    QPalette p;
    p.setColor(QPalette::Window, QColor(0x2b, 0x2b, 0x2b));
    p.setColor(QPalette::Base, QColor(0x1e, 0x1e, 0x1e));
    p.setColor(QPalette::Text, QColor(0xe6, 0xe6, 0xe6));
    p.setColor(QPalette::WindowText, QColor(0xe6, 0xe6, 0xe6));
    return p;
}

} // namespace

class TestChatReasoningView : public QObject {
    Q_OBJECT
private slots:
    void reasoningStreamsAboveTheAnswerAndFolds_data();
    void reasoningStreamsAboveTheAnswerAndFolds();
    void withoutReasoningTheTextIsAsItCame();
};

void TestChatReasoningView::reasoningStreamsAboveTheAnswerAndFolds_data() {
    QTest::addColumn<bool>("dark");
    QTest::newRow("light") << false;
    QTest::newRow("dark") << true;
}

void TestChatReasoningView::reasoningStreamsAboveTheAnswerAndFolds() {
    QFETCH(bool, dark);
    ChatPanel panel(1, Qt::blue);
    if (dark)
        panel.setPalette(darkPalette());
    panel.setReasoningMode({ReasoningFormat::harmony, false});
    panel.submit(QStringLiteral("Hi"));
    for (const char* piece : {"<|channel|>analysis<|mes", "sage|>The user greets", " me.<|en"})
        panel.appendText(QString::fromUtf8(piece));
    // Live: the analysis so far, no marker, no answer yet.
    QString shown = panel.transcriptText();
    QVERIFY2(shown.contains(QStringLiteral("Reasoning\nThe user greets me.")), qPrintable(shown));
    QVERIFY2(!shown.contains(QStringLiteral("<|")), qPrintable(shown));
    panel.appendText(QStringLiteral("d|><|start|>assistant<|channel|>final<|message|>Hello"));
    panel.appendText(QStringLiteral(" there!"));
    shown = panel.transcriptText();
    QVERIFY2(shown.endsWith(QStringLiteral("Reasoning\nThe user greets me.\nHello there!")), qPrintable(shown));

    // Dimmed: readable (contrast >= 4.5 against the background) and quieter than the answer.
    const QColor base = panel.palette().color(QPalette::Base);
    const QColor thought = colourOf(panel, QStringLiteral("The user greets"));
    const QColor answer = panel.palette().color(QPalette::Text);
    QVERIFY2(contrast(thought, base) >= 4.5, qPrintable(thought.name()));
    QVERIFY2(contrast(thought, base) < contrast(answer, base), qPrintable(thought.name()));

    // The turn ends: the reasoning folds into its link, the answer stays.
    panel.finishTurn(stopped());
    shown = panel.transcriptText();
    QVERIFY2(!shown.contains(QStringLiteral("The user greets")), qPrintable(shown));
    QVERIFY2(shown.contains(QStringLiteral("Reasoning \u00b7 4 words\nHello there!")), qPrintable(shown));
    QVERIFY(!panel.reasoningShown(0));
    const ChatMessage& reply = panel.history().back();
    QCOMPARE(reply.content, std::string("Hello there!"));
    QCOMPARE(reply.reasoning, std::string("The user greets me."));

    // Its link shows it and hides it again (as a click on it does).
    auto* transcript = panel.findChild<QTextBrowser*>(QStringLiteral("transcript"));
    emit transcript->anchorClicked(QUrl(QStringLiteral("reasoning:0")));
    QVERIFY(panel.reasoningShown(0));
    QVERIFY2(panel.transcriptText().contains(QStringLiteral("Reasoning\nThe user greets me.\nHello there!")),
             qPrintable(panel.transcriptText()));
    // A second turn leaves the first one's reasoning where it is.
    panel.submit(QStringLiteral("Again"));
    panel.appendText(QStringLiteral("<|channel|>analysis<|message|>Once more.<|end|><|start|>assistant"
                                    "<|channel|>final<|message|>Hi again."));
    panel.finishTurn(stopped());
    panel.toggleReasoning(0);
    shown = panel.transcriptText();
    QVERIFY2(!shown.contains(QStringLiteral("The user greets")), qPrintable(shown));
    QVERIFY2(shown.contains(QStringLiteral("Reasoning \u00b7 2 words\nHi again.")), qPrintable(shown));
    QCOMPARE(panel.history().size(), 4u);
}

void TestChatReasoningView::withoutReasoningTheTextIsAsItCame() {
    ChatPanel panel(1, Qt::blue);
    panel.submit(QStringLiteral("Hi"));
    panel.appendText(QStringLiteral("<think>not"));
    panel.appendText(QStringLiteral(" special</think>"));
    panel.finishTurn(stopped());
    QVERIFY2(panel.transcriptText().contains(QStringLiteral("Model\n<think>not special</think>\n")),
             qPrintable(panel.transcriptText()));
    QCOMPARE(panel.history().back().content, std::string("<think>not special</think>"));
    QVERIFY(panel.history().back().reasoning.empty());
}

QTEST_MAIN(TestChatReasoningView)
#include "test_chat_reasoning_view.moc"
