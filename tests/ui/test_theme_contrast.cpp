// Text contrast in the light and the dark theme, measured on the rendered
// pixels (text_contrast.h): the main window with stories260K loaded, one
// chat turn done and the playground's A/B/C example run, is grabbed with
// each dock in front, on each tab, and connected to a (sampled) vLLM
// server. Every text on screen (labels, buttons, fields and their
// placeholders, tab and group box titles, table cells, the transcript's
// paragraphs, the plots' axis labels, colour scales and notes) must reach
// WCAG's 4.5:1 against its background. One row switches to dark after the
// content was written in light: what was drawn before the switch must
// follow it too. Needs the shared models folder (label model).
#include <QAbstractItemView>
#include <QAbstractTextDocumentLayout>
#include <QCheckBox>
#include <QComboBox>
#include <QGroupBox>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QRadioButton>
#include <QScrollBar>
#include <QStandardPaths>
#include <QStyleOption>
#include <QTabBar>
#include <QTextBlock>
#include <QTextBrowser>
#include <QtTest>

#include <qcustomplot.h>

#include "layout_checks.h"
#include "support/test_models.h"
#include "tests/ui/remote_samples.h"
#include "text_contrast.h"
#include "ui/chat/chat_panel.h"
#include "ui/chat/chat_tabs.h"
#include "ui/playground/playground_panel.h"
#include "ui/settings/kv_calculator_dialog.h"
#include "ui/shell/main_window.h"
#include "ui/shell/theme.h"

using namespace kvscope;
using namespace kvscope::ui;
using namespace kvscope::ui::test;

namespace {

QString colourName(const QColor& c) { return c.name(); }

// Checks text in one grabbed image of the window.
class ContrastCheck {
public:
    explicit ContrastCheck(QWidget& window) : window_(window), image_(window.grab().toImage()) {}

    // `rect` in `w`'s coordinates holds text called `what`.
    void text(const QWidget& w, QRect rect, const QString& what) {
        rect &= w.visibleRegion().boundingRect();
        if (rect.isEmpty())
            return;
        const QRect inWindow(w.mapTo(&window_, rect.topLeft()), rect.size());
        const std::optional<TextContrast> c = lowestTextContrast(image_, inWindow);
        if (!c) {
            problems_ << QStringLiteral("%1: no text visible").arg(describe(w, what));
        } else if (!c->readable()) {
            problems_ << QStringLiteral("%1: contrast %2, under %3 (text %4 on %5 at %6,%7)")
                             .arg(describe(w, what))
                             .arg(c->ratio, 0, 'f', 2)
                             .arg(c->wanted)
                             .arg(colourName(c->text), colourName(c->background))
                             .arg(c->word.x())
                             .arg(c->word.y());
        }
    }

    QStringList problems() const { return problems_; }

private:
    QWidget& window_;
    QImage image_;
    QStringList problems_;
};

bool shown(const QWidget& w) { return onScreen(w) && w.isEnabled(); }

void checkLabels(QWidget& window, ContrastCheck& check) {
    for (const QLabel* label : window.findChildren<QLabel*>())
        if (shown(*label) && !label->text().trimmed().isEmpty())
            check.text(*label, label->contentsRect(), label->text());
}

QRect buttonContents(const QAbstractButton& button) {
    QStyleOptionButton option;
    option.initFrom(&button);
    option.text = button.text();
    QStyle::SubElement contents = QStyle::SE_PushButtonContents;
    if (qobject_cast<const QCheckBox*>(&button))
        contents = QStyle::SE_CheckBoxContents;
    else if (qobject_cast<const QRadioButton*>(&button))
        contents = QStyle::SE_RadioButtonContents;
    else if (!qobject_cast<const QPushButton*>(&button))
        return button.rect().adjusted(3, 3, -3, -3);
    return button.style()->subElementRect(contents, &option, &button);
}

void checkButtons(QWidget& window, ContrastCheck& check) {
    for (const QAbstractButton* button : window.findChildren<QAbstractButton*>())
        if (shown(*button) && !button->text().trimmed().isEmpty())
            check.text(*button, buttonContents(*button), button->text());
}

// Line edits (spin boxes' too) with their text or, empty, their placeholder;
// a plain text edit's placeholder; a combo box's current text.
void checkFields(QWidget& window, ContrastCheck& check) {
    for (const QLineEdit* edit : window.findChildren<QLineEdit*>()) {
        const QString text = edit->text().isEmpty() ? edit->placeholderText() : edit->text();
        if (shown(*edit) && !text.trimmed().isEmpty())
            check.text(*edit, edit->contentsRect().adjusted(2, 1, -2, -1), text);
    }
    for (const QPlainTextEdit* edit : window.findChildren<QPlainTextEdit*>())
        if (shown(*edit) && edit->document()->isEmpty() && !edit->placeholderText().isEmpty()) {
            const QWidget& view = *edit->viewport();
            check.text(view, QRect(0, 0, view.width(), 2 * edit->fontMetrics().lineSpacing()), edit->placeholderText());
        }
    for (const QComboBox* combo : window.findChildren<QComboBox*>()) {
        if (!shown(*combo) || combo->isEditable() || combo->currentText().trimmed().isEmpty())
            continue;
        QStyleOptionComboBox option;
        option.initFrom(combo);
        option.currentText = combo->currentText();
        const QRect field = combo->style()->subControlRect(QStyle::CC_ComboBox, &option, QStyle::SC_ComboBoxEditField, combo);
        check.text(*combo, field, combo->currentText());
    }
}

// Tab titles (the window's pages, the chats, tabbed docks) and group box
// titles, where the style draws them (beside a tab's icon, inside a box's frame).
void checkTitles(QWidget& window, ContrastCheck& check) {
    for (const QTabBar* bar : window.findChildren<QTabBar*>()) {
        if (!shown(*bar))
            continue;
        for (int i = 0; i < bar->count(); ++i) {
            QStyleOptionTab option;
            option.initFrom(bar);
            option.rect = bar->tabRect(i);
            option.text = bar->tabText(i);
            option.icon = bar->tabIcon(i);
            option.iconSize = bar->iconSize();
            option.shape = bar->shape();
            if (bar->isTabEnabled(i) && !option.text.isEmpty())
                check.text(*bar, bar->style()->subElementRect(QStyle::SE_TabBarTabText, &option, bar), option.text);
        }
    }
    for (const QGroupBox* box : window.findChildren<QGroupBox*>()) {
        if (!shown(*box) || box->title().isEmpty())
            continue;
        QStyleOptionGroupBox option;
        option.initFrom(box);
        option.text = box->title();
        option.subControls = QStyle::SC_GroupBoxLabel | QStyle::SC_GroupBoxFrame;
        check.text(*box, box->style()->subControlRect(QStyle::CC_GroupBox, &option, QStyle::SC_GroupBoxLabel, box),
                   box->title());
    }
}

// The cells of tables and lists wholly in view (the top level of their model).
void checkItemViews(QWidget& window, ContrastCheck& check) {
    for (const QAbstractItemView* view : window.findChildren<QAbstractItemView*>()) {
        if (!shown(*view) || !view->model() || qobject_cast<const QComboBox*>(view->parentWidget()))
            continue;
        const QAbstractItemModel& model = *view->model();
        for (int r = 0; r < model.rowCount(); ++r)
            for (int c = 0; c < model.columnCount(); ++c) {
                const QModelIndex index = model.index(r, c);
                const QString text = index.data().toString();
                const QRect cell = view->visualRect(index).adjusted(2, 1, -2, -1);
                if (!text.trimmed().isEmpty() && view->viewport()->visibleRegion().boundingRect().contains(cell))
                    check.text(*view->viewport(), cell, text);
            }
    }
}

// Each paragraph of a rich text view in view (the chat transcript).
void checkTextViews(QWidget& window, ContrastCheck& check) {
    for (const QTextEdit* edit : window.findChildren<QTextEdit*>()) {
        if (!shown(*edit))
            continue;
        const QPoint scrolled(edit->horizontalScrollBar()->value(), edit->verticalScrollBar()->value());
        QAbstractTextDocumentLayout* layout = edit->document()->documentLayout();
        for (QTextBlock block = edit->document()->begin(); block.isValid(); block = block.next()) {
            const QRect rect = layout->blockBoundingRect(block).toAlignedRect().translated(-scrolled);
            if (!block.text().trimmed().isEmpty() && rect.intersects(edit->viewport()->rect()))
                check.text(*edit->viewport(), rect, block.text());
        }
    }
}

// The area between an axis and the edge of its axis rect's outer rect:
// its tick labels and its label.
QRect axisTextArea(const QCPAxis& axis) {
    const QRect inner = axis.axisRect()->rect();
    const QRect outer = axis.axisRect()->outerRect();
    switch (axis.axisType()) {
    case QCPAxis::atLeft: return QRect(QPoint(outer.left(), inner.top()), QPoint(inner.left() - 2, inner.bottom()));
    case QCPAxis::atRight: return QRect(QPoint(inner.right() + 2, inner.top()), QPoint(outer.right(), inner.bottom()));
    case QCPAxis::atTop: return QRect(QPoint(inner.left(), outer.top()), QPoint(inner.right(), inner.top() - 2));
    case QCPAxis::atBottom: return QRect(QPoint(inner.left(), inner.bottom() + 2), QPoint(inner.right(), outer.bottom()));
    }
    return {};
}

// The plots' axis labels (the visible axes with a label or tick labels)
// and their text items (a chart's empty-state note).
void checkPlots(QWidget& window, ContrastCheck& check) {
    for (QCustomPlot* plot : window.findChildren<QCustomPlot*>()) {
        if (!shown(*plot))
            continue;
        QList<QCPAxis*> axes;
        for (QCPAxisRect* rect : plot->axisRects())
            axes += rect->axes();
        for (QCPLayoutElement* element : plot->plotLayout()->elements(true)) // a heatmap's colour scale
            if (auto* scale = qobject_cast<QCPColorScale*>(element))
                axes += scale->axis();
        for (QCPAxis* axis : axes)
            if (axis->visible() && (axis->tickLabels() || !axis->label().isEmpty()))
                check.text(*plot, axisTextArea(*axis), QStringLiteral("axis '%1'").arg(axis->label()));
        for (int i = 0; i < plot->itemCount(); ++i)
            if (auto* note = qobject_cast<QCPItemText*>(plot->item(i)); note && note->visible())
                check.text(*plot, QRect(note->topLeft->pixelPosition().toPoint(), note->bottomRight->pixelPosition().toPoint()),
                           note->text());
    }
}

// The plots draw from a buffer they replot on a cooldown: draw it now.
void replotAll(QWidget& window) {
    for (QCustomPlot* plot : window.findChildren<QCustomPlot*>())
        if (plot->isVisible())
            plot->replot();
}

QStringList unreadableText(QWidget& window) {
    replotAll(window);
    ContrastCheck check(window);
    checkLabels(window, check);
    checkButtons(window, check);
    checkFields(window, check);
    checkTitles(window, check);
    checkItemViews(window, check);
    checkTextViews(window, check);
    checkPlots(window, check);
    return check.problems();
}

} // namespace

class TestThemeContrast : public QObject {
    Q_OBJECT

private slots:
    void initTestCase() { QStandardPaths::setTestModeEnabled(true); } // no saved layout, no saved theme

    void cleanup() { applyTheme(Theme::System); }

    void everyPanelIsReadable_data() {
        QTest::addColumn<int>("written"); // the theme the content was written in
        QTest::addColumn<int>("shown");
        QTest::addRow("light") << static_cast<int>(Theme::Light) << static_cast<int>(Theme::Light);
        QTest::addRow("dark") << static_cast<int>(Theme::Dark) << static_cast<int>(Theme::Dark);
        QTest::addRow("light, then dark") << static_cast<int>(Theme::Light) << static_cast<int>(Theme::Dark);
    }
    void everyPanelIsReadable() {
        KVSCOPE_REQUIRE_MODEL(model, "stories260K-f32.gguf");
        QFETCH(int, written);
        QFETCH(int, shown);
        applyTheme(static_cast<Theme>(written));
        MainWindow window;
        QVERIFY(loadAt(window, {1600, 1000}, model));
        QSignalSpy finished(&window, &MainWindow::turnFinished);
        window.submitPrompt(QStringLiteral("Once upon a time"));
        QVERIFY(finished.wait(kWaitMs));
        auto* abc = window.playground()->findChild<QPushButton*>(QStringLiteral("abcScenario"));
        QVERIFY(abc);
        abc->click();
        applyTheme(static_cast<Theme>(shown));
        QVERIFY(settle(window));

        QStringList problems;
        for (const QString& name : MainWindow::dockNames()) {
            QVERIFY(window.raiseDock(name));
            QVERIFY(settle(window));
            problems += unreadableText(window);
        }
        for (MainWindow::Page page : {MainWindow::Page::Compare, MainWindow::Page::Playground}) {
            window.showPage(page);
            QVERIFY(settle(window));
            problems += unreadableText(window);
        }
        window.showPage(MainWindow::Page::Chat);
        window.showServerSample(std::make_shared<const attach::RemoteSample>(vllmSample()));
        QVERIFY(window.isConnected());
        QVERIFY(settle(window));
        problems += unreadableText(window);
        problems.removeDuplicates();
        for (const QString& problem : problems) // one a line: QVERIFY2 would cut a long list short
            qWarning().noquote() << problem;
        QVERIFY2(problems.isEmpty(), qPrintable(QStringLiteral("%1 texts under their contrast, listed above").arg(problems.size())));
    }

    // Tools > KV Calculator's error line (a GPU chosen for a model of no
    // known size), in each theme.
    void calculatorErrorIsReadable_data() {
        QTest::addColumn<int>("theme");
        QTest::addRow("light") << static_cast<int>(Theme::Light);
        QTest::addRow("dark") << static_cast<int>(Theme::Dark);
    }
    void calculatorErrorIsReadable() {
        QFETCH(int, theme);
        applyTheme(static_cast<Theme>(theme));
        KvCalculatorDialog dialog;
        dialog.setLoadedModel(CalcModel{.name = "custom", .kv = {4, 2, 64}, .context = 1024});
        auto* gpu = dialog.findChild<QComboBox*>(QStringLiteral("gpu"));
        QVERIFY(gpu);
        gpu->setCurrentIndex(gpu->findText(QStringLiteral("a100-40gb")));
        QVERIFY(!dialog.errorText().isEmpty());
        QVERIFY(showAt(dialog, {1000, 700}));
        const QStringList problems = unreadableText(dialog);
        for (const QString& problem : problems)
            qWarning().noquote() << problem;
        QVERIFY2(problems.isEmpty(), qPrintable(QStringLiteral("%1 texts under their contrast, listed above").arg(problems.size())));
    }
};

QTEST_MAIN(TestThemeContrast)
#include "test_theme_contrast.moc"
