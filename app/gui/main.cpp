// kvscope: the desktop app. Options are parsed here; everything shown lives
// in ui/.
#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include <QApplication>
#include <QCommandLineParser>
#include <QPixmap>
#include <QStringList>
#include <QTimer>

#include "app/gui/bench_paint.h"
#include "engine/core/error.h"
#include "engine/core/log.h"
#include "ui/shell/app_info.h"
#include "ui/compare/compare_panel.h"
#include "ui/server/connect_dialog.h"
#include "ui/settings/workload_dock.h"
#include "ui/shell/main_window.h"
#include "ui/playground/playground_panel.h"
#include "ui/shell/theme.h"

namespace {

constexpr QSize kScreenshotSize(1280, 800);
constexpr QSize kMinWindowSize(640, 480);
constexpr QSize kMaxWindowSize(7680, 4320);
// Screenshots go into the repository: the smallest PNG zlib makes.
constexpr int kPngSmallest = 0;
// A scripted screenshot gives up when the model or its turn takes longer.
constexpr int kScriptTimeoutMs = 10 * 60 * 1000;
constexpr int kSettleMs = 200;
// A scripted screenshot of a server gives up when it has not answered by then.
constexpr int kServerTimeoutMs = 30 * 1000;

// Runs that never show a window: a screenshot, a benchmark, or text for the terminal.
// They must work with no display, so QT_QPA_PLATFORM is set before
// QApplication exists, which is before QCommandLineParser can run: hence
// this look at argv.
bool needsNoDisplay(int argc, char** argv) {
    for (int i = 1; i < argc; ++i) {
        const std::string_view arg = argv[i];
        if (arg == "--screenshot" || arg.starts_with("--screenshot=") || arg == "--bench-paint" ||
            arg == "--help" || arg == "-h" ||
            arg == "--help-all" || arg == "--version" || arg == "-v")
            return true;
    }
    return false;
}

// On Linux a window needs X11 or Wayland; without either, Qt would abort
// with a plugin error. Say what works instead.
bool displayMissing() {
#ifdef Q_OS_LINUX
    return qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM") && qEnvironmentVariableIsEmpty("DISPLAY") &&
           qEnvironmentVariableIsEmpty("WAYLAND_DISPLAY");
#else
    return false;
#endif
}

int explainHeadless() {
    std::fprintf(stderr,
                 "kvscope: no display (neither DISPLAY nor WAYLAND_DISPLAY is set), so the window cannot open.\n"
                 "Headless, use the command line instead:\n"
                 "  kvscope-cli chat --model FILE.gguf        chat in the terminal\n"
                 "  kvscope-cli bench serve --model FILE.gguf  the serving engine under load\n"
                 "  kvscope-cli calc --preset llama-3-8b       KV memory for a model\n"
                 "  kvscope --model FILE.gguf --prompt TEXT --screenshot out.png\n"
                 "                                            the app, rendered offscreen to a PNG\n");
    return 2;
}

int fail(const QString& message) {
    std::fprintf(stderr, "kvscope: %s\n", qPrintable(message));
    return 1;
}

// The option's value as an integer in [min, max], `fallback` when it is not
// given, or nullopt (after saying why) when it is not such a number.
std::optional<std::int64_t> intOption(const QCommandLineParser& parser, const QCommandLineOption& option,
                                      std::int64_t fallback, std::int64_t min, std::int64_t max) {
    if (!parser.isSet(option))
        return fallback;
    bool ok = false;
    const qlonglong value = parser.value(option).toLongLong(&ok);
    if (ok && value >= min && value <= max)
        return value;
    fail(QStringLiteral("--%1 needs a whole number from %2 to %3, got '%4'")
             .arg(option.names().first())
             .arg(min)
             .arg(max)
             .arg(parser.value(option)));
    return std::nullopt;
}

// --window-size WxH, e.g. 1600x1000; nullopt (after saying why) when it is
// not such a size within the limits.
std::optional<QSize> windowSize(const QString& text) {
    const QStringList parts = text.split(QLatin1Char('x'));
    bool okW = false, okH = false;
    const QSize size = parts.size() == 2 ? QSize(parts[0].toInt(&okW), parts[1].toInt(&okH)) : QSize();
    if (okW && okH && size.expandedTo(kMinWindowSize) == size && size.boundedTo(kMaxWindowSize) == size)
        return size;
    fail(QStringLiteral("--window-size needs WIDTHxHEIGHT from %1x%2 to %3x%4, e.g. 1600x1000; got '%5'")
             .arg(kMinWindowSize.width())
             .arg(kMinWindowSize.height())
             .arg(kMaxWindowSize.width())
             .arg(kMaxWindowSize.height())
             .arg(text));
    return std::nullopt;
}

// What --tab and --show ask the window to show, applied once the model is
// in place (loading one shows the chat).
struct RequestedView {
    std::optional<kvscope::ui::MainWindow::Page> page;
    QString dock;
};

void showRequestedView(kvscope::ui::MainWindow& window, const RequestedView& view) {
    if (view.page)
        window.showPage(*view.page);
    if (!view.dock.isEmpty())
        window.raiseDock(view.dock);
}

// A --bench-paint option taking a number; the help shows its default.
QCommandLineOption benchPaintNumber(const char* name, const char* what, const char* valueName, std::int64_t fallback) {
    return {QString::fromLatin1(name),
            QStringLiteral("With --bench-paint: %1 (default %2).").arg(QString::fromLatin1(what)).arg(fallback),
            QString::fromLatin1(valueName)};
}

// Renders the window (already sized) without putting it on any screen and saves it.
int saveScreenshot(kvscope::ui::MainWindow& window, const QString& file) {
    window.setAttribute(Qt::WA_DontShowOnScreen);
    window.show();
    QApplication::processEvents();
    if (!window.grab().save(file, nullptr, kPngSmallest))
        return fail(QStringLiteral("could not save the screenshot to '%1' (unwritable, or not a known image "
                                   "type such as .png)")
                        .arg(file));
    return 0;
}

// --model/--synthetic with --screenshot: load, send the prompts, and save
// once the last turn has finished, or `afterMs` after sending the first
// when given (the chat then may still be generating: the live picture).
// Then quit; a turn that fails ends the run with its error. The turns
// themselves are sent by sendTurns.
void scriptScreenshot(kvscope::ui::MainWindow& window, const QStringList& prompts, std::optional<int> afterMs,
                      const QString& file) {
    using kvscope::ui::MainWindow;
    window.setAttribute(Qt::WA_DontShowOnScreen);
    window.show();
    const auto save = [&window, file] { QApplication::exit(saveScreenshot(window, file)); };
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
                     [save, afterMs, left = prompts.size()](const kvscope::ui::TurnStats& stats) mutable {
                         if (stats.finish == kvscope::FinishReason::Error)
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

// Whether a server's sample holds its first full picture: the link is live
// and, for a kvscope server, its engine snapshot (from /kv/stream, after the
// first poll) has come too.
bool fullPicture(const kvscope::attach::RemoteSample& sample) {
    return sample.link == kvscope::attach::LinkState::Live &&
           (sample.kind != kvscope::attach::ServerKind::Kvscope || sample.engine);
}

// --connect with --screenshot: save once the server's first full picture is
// shown (fullPicture), or `afterMs` after connecting when given (the view may then still
// be connecting, or reconnecting); then quit. A server that has not
// answered within kServerTimeoutMs ends the run with its last fault.
void scriptServerScreenshot(kvscope::ui::MainWindow& window, std::optional<int> afterMs, const QString& file) {
    using kvscope::ui::MainWindow;
    using Sample = std::shared_ptr<const kvscope::attach::RemoteSample>;
    window.setAttribute(Qt::WA_DontShowOnScreen);
    window.show();
    const auto save = [&window, file] { QApplication::exit(saveScreenshot(window, file)); };
    if (afterMs) {
        QTimer::singleShot(*afterMs, &window, save);
        return;
    }
    QObject::connect(&window, &MainWindow::serverSampleShown, &window,
                     [save, saving = false](const Sample& sample) mutable {
                         if (fullPicture(*sample) && !std::exchange(saving, true))
                             QTimer::singleShot(kSettleMs, save); // let the panels paint what came
                     });
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

// One line on standard error per finished scripted turn, so that a
// terminal (or a test) sees each reply arrive.
void reportTurn(qsizetype turn, qsizetype turns, const kvscope::ui::TurnStats& stats) {
    std::fprintf(stderr, "kvscope: turn %lld/%lld: %u prompt + %u new tokens, %s", static_cast<long long>(turn),
                 static_cast<long long>(turns), stats.prompt_tokens, stats.generated_tokens,
                 std::string(kvscope::to_string(stats.finish)).c_str());
    if (stats.dropped_messages > 0)
        std::fprintf(stderr, ", %u oldest messages left out (context full)", stats.dropped_messages);
    if (stats.finish == kvscope::FinishReason::Error)
        std::fprintf(stderr, ": %s", stats.error.c_str());
    std::fputs("\n", stderr);
}

// Once the model is ready: start Compare A/B's engine B and the workload
// (when asked for, in that order, so that B gets the workload too) and send
// the prompts in the first chat, each once the reply to the one before has
// ended (as a person would).
void sendTurns(kvscope::ui::MainWindow& window, const QStringList& prompts, std::optional<std::uint32_t> workload,
               bool compare) {
    QObject::connect(
        &window, &kvscope::ui::MainWindow::modelReady, &window,
        [&window, prompts, workload, compare] {
            if (compare)
                window.compare()->start();
            if (workload) {
                kvscope::WorkloadSpec spec = window.workload()->spec();
                spec.requests = *workload;
                window.workload()->setSpec(spec);
                window.workload()->requestStart();
            }
            if (!prompts.isEmpty())
                window.submitPrompt(prompts.front());
        },
        Qt::SingleShotConnection);
    if (prompts.isEmpty())
        return;
    QObject::connect(&window, &kvscope::ui::MainWindow::turnFinished, &window,
                     [&window, prompts, sent = qsizetype{1}](const kvscope::ui::TurnStats& stats) mutable {
                         if (sent > prompts.size())
                             return; // a turn typed by hand after the script
                         reportTurn(sent, prompts.size(), stats);
                         if (sent < prompts.size() && stats.finish != kvscope::FinishReason::Error)
                             window.submitPrompt(prompts.at(sent));
                         ++sent;
                     });
}

} // namespace

int main(int argc, char** argv) {
    if (needsNoDisplay(argc, argv) && qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM"))
        qputenv("QT_QPA_PLATFORM", "offscreen");
    else if (displayMissing())
        return explainHeadless();
    QApplication app(argc, argv);
    QApplication::setOrganizationName(QStringLiteral("kvscope"));
    QApplication::setApplicationName(QStringLiteral("kvscope"));
    // The installed desktop entry's name: desktops match the window to its
    // entry and icon by it (the Wayland app id).
    QGuiApplication::setDesktopFileName(QStringLiteral(KVSCOPE_APP_ID));
    QApplication::setApplicationVersion(kvscope::ui::appVersion());
    QApplication::setWindowIcon(kvscope::ui::appIcon());

    QCommandLineParser parser;
    parser.setApplicationDescription(QStringLiteral("See how an LLM's paged KV cache lives in memory."));
    parser.addHelpOption();
    parser.addVersionOption();
    const QCommandLineOption model(QStringLiteral("model"), QStringLiteral("Open this GGUF model and start a chat."),
                                   QStringLiteral("FILE"));
    const QCommandLineOption synthetic(QStringLiteral("synthetic"),
                                       QStringLiteral("Build a model of this preset's shape with random weights "
                                                      "(meaningless text, real memory) and start a chat."),
                                       QStringLiteral("PRESET"));
    const QCommandLineOption prompt(QStringLiteral("prompt"),
                                    QStringLiteral("Send this message in the first chat once the model is loaded; "
                                                   "repeat it for more turns, each sent when the reply before "
                                                   "has ended."),
                                    QStringLiteral("TEXT"));
    const QCommandLineOption screenshot(QStringLiteral("screenshot"),
                                        QStringLiteral("Render the main window offscreen to FILE (.png) and exit; "
                                                       "with a model, after the last --prompt turn has finished "
                                                       "(exit status 1 if a turn fails)."),
                                        QStringLiteral("FILE"));
    const QCommandLineOption afterMs(QStringLiteral("after-ms"),
                                     QStringLiteral("With --screenshot and a model: render this long after the "
                                                    "prompt is sent, while it may still be generating (default: "
                                                    "when the turn has finished); with --connect, this long after "
                                                    "connecting (default: once the server has answered)."),
                                     QStringLiteral("MS"));
    const QCommandLineOption workload(QStringLiteral("workload"),
                                      QStringLiteral("Once the model is loaded, also start a synthetic workload of N "
                                                     "requests (the Workload dock's other settings)."),
                                      QStringLiteral("N"));
    const QCommandLineOption compare(QStringLiteral("compare"),
                                     QStringLiteral("Once the model is loaded, start Compare A/B's engine B with its "
                                                    "default settings: the prompts and workload go to both."));
    const QCommandLineOption scenario(QStringLiteral("scenario"),
                                      QStringLiteral("Play a scenario in the allocator playground first: abc (the "
                                                     "A/B/C fragmentation example) or parallel (parallel sampling)."),
                                      QStringLiteral("NAME"));
    const QCommandLineOption size(QStringLiteral("window-size"),
                                  QStringLiteral("The window's size, e.g. 1600x1000 (screenshots: 1280x800 unless "
                                                 "given)."),
                                  QStringLiteral("WxH"));
    const QCommandLineOption theme(QStringLiteral("theme"),
                                   QStringLiteral("system, light or dark, for this run (View > Theme chooses the "
                                                  "one kept between runs)."),
                                   QStringLiteral("THEME"));
    const QCommandLineOption tab(QStringLiteral("tab"),
                                 QStringLiteral("Show this tab once the model is loaded: %1.")
                                     .arg(kvscope::ui::MainWindow::pageNames().join(QStringLiteral(", "))),
                                 QStringLiteral("TAB"));
    const QCommandLineOption show(QStringLiteral("show"),
                                  QStringLiteral("Bring this dock to the front once the model is loaded: %1.")
                                      .arg(kvscope::ui::MainWindow::dockNames().join(QStringLiteral(", "))),
                                  QStringLiteral("DOCK"));
    const QCommandLineOption connectUrl(
        QStringLiteral("connect"),
        QStringLiteral("Watch the server at this URL (kvscope-cli serve, llama.cpp's llama-server or vLLM), as "
                       "File > Connect to Server does; with --screenshot, once it has answered."),
        QStringLiteral("URL"));
    const QCommandLineOption kvEvents(QStringLiteral("kv-events"),
                                      QStringLiteral("With --connect to vLLM: its KV-events publishers, "
                                                     "comma-separated, one per data-parallel rank."),
                                      QStringLiteral("tcp://HOST:PORT[,...]"));
    const QCommandLineOption kvReplay(QStringLiteral("kv-replay"),
                                      QStringLiteral("With --kv-events: the publishers' replay endpoints, in the "
                                                     "same order."),
                                      QStringLiteral("tcp://HOST:PORT[,...]"));
    const QCommandLineOption kvTopic(QStringLiteral("kv-topic"),
                                     QStringLiteral("With --kv-events: the publishers' topic (default: every topic)."),
                                     QStringLiteral("TOPIC"));
    const QCommandLineOption apiKey(QStringLiteral("api-key"),
                                    QStringLiteral("With --connect: sent as a bearer token."), QStringLiteral("KEY"));
    const QCommandLineOption serverKind(QStringLiteral("server-kind"),
                                        QStringLiteral("With --connect: %1 (default auto: detected).")
                                            .arg(kvscope::ui::serverKindNames().join(QStringLiteral(", "))),
                                        QStringLiteral("KIND"));
    const QCommandLineOption kvDtype(QStringLiteral("kv-dtype"),
                                     QStringLiteral("With --connect to llama.cpp: its KV cache type (-ctk), which it "
                                                    "does not report: %1 (default f16).")
                                         .arg(kvscope::ui::llamaCppKvDtypes().join(QStringLiteral(", "))),
                                     QStringLiteral("TYPE"));
    const QCommandLineOption kvUnified(QStringLiteral("kv-unified"),
                                       QStringLiteral("With --connect to llama.cpp: whether its slots share one KV "
                                                      "buffer (-kvu), which it does not report: yes, no or auto "
                                                      "(default: guess, shared with 4 slots)."),
                                       QStringLiteral("yes|no|auto"));
    const QCommandLineOption logLevel(QStringLiteral("log-level"),
                                      QStringLiteral("trace, debug, info, warn, error, critical or off."),
                                      QStringLiteral("LEVEL"), QStringLiteral("info"));
    const QCommandLineOption benchPaint(QStringLiteral("bench-paint"),
                                        QStringLiteral("Time painting the block map of a large, busy pool "
                                                       "(offscreen), print the median and p95 ms per frame, and exit."));
    const kvscope::gui::BenchPaintOptions paint;
    const QCommandLineOption blocks = benchPaintNumber("blocks", "blocks in the pool", "N", paint.blocks);
    const QCommandLineOption frames = benchPaintNumber("frames", "frames to time", "F", paint.frames);
    const QCommandLineOption width = benchPaintNumber("width", "the block map's width", "W", paint.width);
    const QCommandLineOption height = benchPaintNumber("height", "the block map's height", "H", paint.height);
    const QCommandLineOption json(QStringLiteral("json"), QStringLiteral("With --bench-paint: print one JSON object."));
    parser.addOptions({model, synthetic, prompt, workload, screenshot, afterMs, compare, size, theme, tab, show,
                       scenario, connectUrl, kvEvents, kvReplay, kvTopic, apiKey, serverKind, kvDtype, kvUnified,
                       logLevel, benchPaint, blocks, frames, width, height, json});
    parser.process(app);

    try {
        kvscope::set_log_level(parser.value(logLevel).toStdString());
    } catch (const kvscope::Error& e) {
        return fail(QString::fromUtf8(e.what()));
    }
    if (parser.isSet(model) && parser.isSet(synthetic))
        return fail(QStringLiteral("--model and --synthetic are alternatives; give one"));
    std::optional<int> after;
    if (parser.isSet(afterMs)) {
        bool ok = false;
        after = parser.value(afterMs).toInt(&ok);
        if (!ok || *after < 0)
            return fail(QStringLiteral("--after-ms needs a number of milliseconds, got '%1'").arg(parser.value(afterMs)));
    }

    if (parser.isSet(benchPaint)) {
        const auto n = intOption(parser, blocks, paint.blocks, 1, 1 << 20);
        const auto f = intOption(parser, frames, paint.frames, 1, 10000);
        const auto w = intOption(parser, width, paint.width, 64, 8192);
        const auto h = intOption(parser, height, paint.height, 64, 8192);
        if (!n || !f || !w || !h)
            return 1;
        return kvscope::gui::run_bench_paint({.blocks = static_cast<std::uint32_t>(*n),
                                              .frames = static_cast<int>(*f),
                                              .width = static_cast<int>(*w),
                                              .height = static_cast<int>(*h),
                                              .json = parser.isSet(json)});
    }

    kvscope::ui::Theme look = kvscope::ui::savedTheme();
    if (parser.isSet(theme)) {
        const auto chosen = kvscope::ui::parseTheme(parser.value(theme));
        if (!chosen)
            return fail(QStringLiteral("--theme needs system, light or dark, got '%1'").arg(parser.value(theme)));
        look = *chosen;
    }
    std::optional<QSize> windowSizeWanted;
    if (parser.isSet(size) && !(windowSizeWanted = windowSize(parser.value(size))))
        return 1;
    RequestedView view;
    if (parser.isSet(tab) && !(view.page = kvscope::ui::MainWindow::parsePage(parser.value(tab))))
        return fail(QStringLiteral("unknown tab '%1' (known: %2)")
                        .arg(parser.value(tab), kvscope::ui::MainWindow::pageNames().join(QStringLiteral(", "))));
    view.dock = parser.value(show);
    if (parser.isSet(show) && !kvscope::ui::MainWindow::dockNames().contains(view.dock))
        return fail(QStringLiteral("unknown dock '%1' (known: %2)")
                        .arg(view.dock, kvscope::ui::MainWindow::dockNames().join(QStringLiteral(", "))));

    kvscope::ui::applyTheme(look);
    kvscope::ui::MainWindow window;
    if (windowSizeWanted)
        window.resize(*windowSizeWanted);
    else if (parser.isSet(screenshot))
        window.resize(kScreenshotSize);
    if (parser.isSet(scenario)) {
        const auto which = kvscope::ui::parse_scenario(parser.value(scenario).toStdString());
        if (!which)
            return fail(QStringLiteral("unknown scenario '%1' (known: abc, parallel)").arg(parser.value(scenario)));
        window.playground()->runScenario(*which);
        window.showPlayground();
    }
    std::optional<kvscope::ui::ModelSource> source;
    if (parser.isSet(model))
        source = kvscope::ui::ModelSource::file(parser.value(model));
    else if (parser.isSet(synthetic))
        source = kvscope::ui::ModelSource::synthetic(parser.value(synthetic));

    std::optional<std::uint32_t> requests;
    if (parser.isSet(workload)) {
        bool ok = false;
        requests = parser.value(workload).toUInt(&ok);
        if (!ok || *requests == 0)
            return fail(QStringLiteral("--workload needs a number of requests, got '%1'").arg(parser.value(workload)));
    }
    if ((parser.isSet(prompt) || requests || parser.isSet(compare)) && !source)
        return fail(QStringLiteral("--prompt, --workload and --compare need --model or --synthetic"));
    const bool connecting = parser.isSet(connectUrl);
    if (connecting && source)
        return fail(QStringLiteral("--connect watches a server; --model and --synthetic run a local engine: give one"));
    for (const QCommandLineOption* option : {&kvEvents, &kvReplay, &kvTopic, &apiKey, &serverKind, &kvDtype, &kvUnified})
        if (parser.isSet(*option) && !connecting)
            return fail(QStringLiteral("--%1 needs --connect").arg(option->names().first()));
    const kvscope::ui::ConnectText server{parser.value(connectUrl), parser.value(apiKey),  parser.value(serverKind),
                                          parser.value(kvEvents),   parser.value(kvReplay), parser.value(kvTopic),
                                          parser.value(kvDtype),    parser.value(kvUnified)};
    if (connecting) {
        try {
            kvscope::ui::connectOptions(server); // says what is wrong before any window shows
        } catch (const kvscope::Error& e) {
            return fail(QString::fromUtf8(e.what()));
        }
        window.connectToServer(server);
    }

    if (source) // loading shows the chat: the requested view comes after
        QObject::connect(&window, &kvscope::ui::MainWindow::modelReady, &window,
                         [&window, view] { showRequestedView(window, view); }, Qt::SingleShotConnection);
    else
        showRequestedView(window, view);
    if (parser.isSet(screenshot) && connecting)
        scriptServerScreenshot(window, after, parser.value(screenshot));
    else if (parser.isSet(screenshot) && !source)
        return saveScreenshot(window, parser.value(screenshot));
    else if (parser.isSet(screenshot))
        scriptScreenshot(window, parser.values(prompt), after, parser.value(screenshot));
    else
        window.show();
    if (source) {
        sendTurns(window, parser.values(prompt), requests, parser.isSet(compare));
        window.openModel(*source);
    }
    return QApplication::exec();
}
