#include "app/gui/scripted_run.h"

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <utility>

#include <QApplication>
#include <QPixmap>
#include <QStringList>
#include <QTimer>

#include "app/gui/fail.h"
#include "ui/compare/compare_panel.h"
#include "ui/settings/workload_dock.h"

namespace kvscope::gui {
namespace {

using ui::MainWindow;

// Screenshots go into the repository: the smallest PNG zlib makes.
constexpr int kPngSmallest = 0;
// A scripted screenshot gives up when the model or its turn takes longer.
constexpr int kScriptTimeoutMs = 10 * 60 * 1000;
constexpr int kSettleMs = 200;
// A scripted screenshot of a server gives up when it has not answered by then.
constexpr int kServerTimeoutMs = 30 * 1000;

void showOffscreen(MainWindow& window) {
    window.setAttribute(Qt::WA_DontShowOnScreen);
    window.show();
}

// Renders the window (already sized) without putting it on any screen and saves it.
int saveScreenshot(MainWindow& window, const QString& file) {
    showOffscreen(window);
    QApplication::processEvents();
    if (!window.grab().save(file, nullptr, kPngSmallest))
        return fail(QStringLiteral("could not save the screenshot to '%1' (unwritable, or not a known image "
                                   "type such as .png)")
                        .arg(file));
    return 0;
}

// What ends a scripted screenshot: saving it, then quitting with the result.
auto saveAndQuit(MainWindow& window, const QString& file) {
    return [&window, file] { QApplication::exit(saveScreenshot(window, file)); };
}

void showRequestedView(MainWindow& window, const RequestedView& view) {
    if (view.page)
        window.showPage(*view.page);
    if (!view.dock.isEmpty())
        window.raiseDock(view.dock);
}

// --model/--synthetic with --screenshot: load, send the prompts, and save
// once the last turn has finished, or `afterMs` after sending the first
// when given (the chat then may still be generating: the live picture).
// Then quit; a turn that fails ends the run with its error. The turns
// themselves are sent by sendTurns.
void scriptScreenshot(MainWindow& window, const QStringList& prompts, std::optional<int> afterMs,
                      const QString& file) {
    showOffscreen(window);
    const auto save = saveAndQuit(window, file);
    QObject::connect(
        &window, &MainWindow::modelReady, &window,
        [afterMs, save, empty = prompts.isEmpty()] {
            if (afterMs)
                QTimer::singleShot(*afterMs, save);
            else if (empty)
                save();
        },
        Qt::SingleShotConnection);
    QObject::connect(&window, &MainWindow::turnFinished, &window,
                     [save, afterMs, left = prompts.size()](const ui::TurnStats& stats) mutable {
                         if (stats.finish == FinishReason::Error)
                             QApplication::exit(fail(QStringLiteral("a chat turn failed: %1")
                                                         .arg(QString::fromStdString(stats.error))));
                         else if (--left == 0 && !afterMs)
                             // The turn's last snapshot follows its last text: let it arrive and paint.
                             QTimer::singleShot(kSettleMs, save);
                     });
    QObject::connect(&window, &MainWindow::modelFailed, &window,
                     [](const QString& message) { QApplication::exit(fail(message)); });
    QTimer::singleShot(kScriptTimeoutMs, &window, [] {
        QApplication::exit(fail(QStringLiteral("the scripted chat turn did not finish in time")));
    });
}

using Sample = std::shared_ptr<const attach::RemoteSample>;

// Whether a server's sample holds its first full picture: the link is live
// and, for a kvscope server, its engine snapshot (from /kv/stream, after the
// first poll) has come too.
bool fullPicture(const attach::RemoteSample& sample) {
    return sample.link == attach::LinkState::Live && (sample.kind != attach::ServerKind::Kvscope || sample.engine);
}

// Ends the run with the server's last fault when it has not answered
// within kServerTimeoutMs (a screenshot saved before then has quit already).
void failWhenServerSilent(MainWindow& window) {
    auto last = std::make_shared<Sample>();
    QObject::connect(&window, &MainWindow::serverSampleShown, &window, [last](const Sample& s) { *last = s; });
    QTimer::singleShot(kServerTimeoutMs, &window, [last] {
        const Sample& s = *last;
        QApplication::exit(fail(QStringLiteral("the server at %1 did not answer in %2 s%3")
                                    .arg(s ? QString::fromStdString(s->url) : QString())
                                    .arg(kServerTimeoutMs / 1000)
                                    .arg(s && !s->faults.empty()
                                             ? QStringLiteral(": ") + QString::fromStdString(s->faults.back())
                                             : QString())));
    });
}

// --connect with --screenshot: save once the server's first full picture is
// shown (fullPicture), or `afterMs` after connecting when given (the view may then still
// be connecting, or reconnecting); then quit. A server that has not
// answered within kServerTimeoutMs ends the run with its last fault.
void scriptServerScreenshot(MainWindow& window, std::optional<int> afterMs, const QString& file) {
    showOffscreen(window);
    const auto save = saveAndQuit(window, file);
    if (afterMs) {
        QTimer::singleShot(*afterMs, &window, save);
        return;
    }
    QObject::connect(&window, &MainWindow::serverSampleShown, &window,
                     [save, saving = false](const Sample& sample) mutable {
                         if (fullPicture(*sample) && !std::exchange(saving, true))
                             QTimer::singleShot(kSettleMs, save); // let the panels paint what came
                     });
    failWhenServerSilent(window);
}

// One line on standard error per finished scripted turn, so that a
// terminal (or a test) sees each reply arrive.
void reportTurn(qsizetype turn, qsizetype turns, const ui::TurnStats& stats) {
    std::fprintf(stderr, "kvscope: turn %lld/%lld: %u prompt + %u new tokens, %s", static_cast<long long>(turn),
                 static_cast<long long>(turns), stats.prompt_tokens, stats.generated_tokens,
                 std::string(to_string(stats.finish)).c_str());
    if (stats.dropped_messages > 0)
        std::fprintf(stderr, ", %u oldest messages left out (context full)", stats.dropped_messages);
    if (stats.finish == FinishReason::Error)
        std::fprintf(stderr, ": %s", stats.error.c_str());
    std::fputs("\n", stderr);
}

// The Workload dock's settings, but `requests` of them, started.
void startWorkload(MainWindow& window, std::uint32_t requests) {
    WorkloadSpec spec = window.workload()->spec();
    spec.requests = requests;
    window.workload()->setSpec(spec);
    window.workload()->requestStart();
}

// Once the model is ready: start Compare A/B's engine B and the workload
// (when asked for, in that order, so that B gets the workload too) and send
// the prompts in the first chat, each once the reply to the one before has
// ended (as a person would).
void sendTurns(MainWindow& window, const QStringList& prompts, std::optional<std::uint32_t> workload, bool compare) {
    QObject::connect(
        &window, &MainWindow::modelReady, &window,
        [&window, prompts, workload, compare] {
            if (compare)
                window.compare()->start();
            if (workload)
                startWorkload(window, *workload);
            if (!prompts.isEmpty())
                window.submitPrompt(prompts.front());
        },
        Qt::SingleShotConnection);
    if (prompts.isEmpty())
        return;
    QObject::connect(&window, &MainWindow::turnFinished, &window,
                     [&window, prompts, sent = qsizetype{1}](const ui::TurnStats& stats) mutable {
                         if (sent > prompts.size())
                             return; // a turn typed by hand after the script
                         reportTurn(sent, prompts.size(), stats);
                         if (sent < prompts.size() && stats.finish != FinishReason::Error)
                             window.submitPrompt(prompts.at(sent));
                         ++sent;
                     });
}

// Without --screenshot, shows the window. With it, arranges for the
// screenshot to be taken when the run has something to show; with nothing
// to wait for (no model, no server), takes it now and returns the exit code.
std::optional<int> startScreenshotOrShow(MainWindow& window, const GuiOptions& options) {
    if (!options.screenshot)
        window.show();
    else if (options.server)
        scriptServerScreenshot(window, options.afterMs, *options.screenshot);
    else if (!options.source)
        return saveScreenshot(window, *options.screenshot);
    else
        scriptScreenshot(window, options.prompts, options.afterMs, *options.screenshot);
    return std::nullopt;
}

} // namespace

std::optional<int> startScriptedRun(MainWindow& window, const GuiOptions& options) {
    if (options.source) // loading shows the chat: the requested view comes after
        QObject::connect(&window, &MainWindow::modelReady, &window,
                         [&window, view = options.view] { showRequestedView(window, view); },
                         Qt::SingleShotConnection);
    else
        showRequestedView(window, options.view);
    if (const auto exitCode = startScreenshotOrShow(window, options))
        return exitCode;
    if (options.source) {
        sendTurns(window, options.prompts, options.workload, options.compare);
        window.openModel(*options.source);
    }
    return std::nullopt;
}

} // namespace kvscope::gui
