// kvscope: the desktop app. Options are parsed here; everything shown lives
// in ui/.
#include <cstdio>
#include <string_view>

#include <QApplication>
#include <QCommandLineParser>
#include <QPixmap>

#include "engine/core/error.h"
#include "engine/core/log.h"
#include "ui/app_info.h"
#include "ui/main_window.h"
#include "ui/playground_panel.h"

namespace {

constexpr QSize kScreenshotSize(1280, 800);

// Runs that never show a window: a screenshot, or text for the terminal.
// They must work with no display, so QT_QPA_PLATFORM is set before
// QApplication exists, which is before QCommandLineParser can run: hence
// this look at argv.
bool needsNoDisplay(int argc, char** argv) {
    for (int i = 1; i < argc; ++i) {
        const std::string_view arg = argv[i];
        if (arg == "--screenshot" || arg.starts_with("--screenshot=") || arg == "--help" || arg == "-h" ||
            arg == "--help-all" || arg == "--version" || arg == "-v")
            return true;
    }
    return false;
}

int fail(const QString& message) {
    std::fprintf(stderr, "kvscope: %s\n", qPrintable(message));
    return 1;
}

// Renders the window without putting it on any screen and saves it.
int saveScreenshot(kvscope::ui::MainWindow& window, const QString& file) {
    window.setAttribute(Qt::WA_DontShowOnScreen);
    window.resize(kScreenshotSize);
    window.show();
    QApplication::processEvents();
    if (!window.grab().save(file))
        return fail(QStringLiteral("could not save the screenshot to '%1' (unwritable, or not a known image "
                                   "type such as .png)")
                        .arg(file));
    return 0;
}

} // namespace

int main(int argc, char** argv) {
    if (needsNoDisplay(argc, argv) && qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM"))
        qputenv("QT_QPA_PLATFORM", "offscreen");
    QApplication app(argc, argv);
    QApplication::setApplicationName(QStringLiteral("kvscope"));
    QApplication::setApplicationVersion(kvscope::ui::appVersion());
    QApplication::setWindowIcon(kvscope::ui::appIcon());

    QCommandLineParser parser;
    parser.setApplicationDescription(QStringLiteral("See how an LLM's paged KV cache lives in memory."));
    parser.addHelpOption();
    parser.addVersionOption();
    const QCommandLineOption screenshot(QStringLiteral("screenshot"),
                                        QStringLiteral("Render the main window offscreen to FILE (.png) and exit."),
                                        QStringLiteral("FILE"));
    const QCommandLineOption scenario(QStringLiteral("scenario"),
                                      QStringLiteral("Play a scenario in the allocator playground first: abc (the "
                                                     "A/B/C fragmentation example) or parallel (parallel sampling)."),
                                      QStringLiteral("NAME"));
    const QCommandLineOption logLevel(QStringLiteral("log-level"),
                                      QStringLiteral("trace, debug, info, warn, error, critical or off."),
                                      QStringLiteral("LEVEL"), QStringLiteral("info"));
    parser.addOptions({screenshot, scenario, logLevel});
    parser.process(app);

    try {
        kvscope::set_log_level(parser.value(logLevel).toStdString());
    } catch (const kvscope::Error& e) {
        return fail(QString::fromUtf8(e.what()));
    }
    kvscope::ui::MainWindow window;
    if (parser.isSet(scenario)) {
        const auto which = kvscope::ui::parse_scenario(parser.value(scenario).toStdString());
        if (!which)
            return fail(QStringLiteral("unknown scenario '%1' (known: abc, parallel)").arg(parser.value(scenario)));
        window.playground()->runScenario(*which);
    }
    if (parser.isSet(screenshot))
        return saveScreenshot(window, parser.value(screenshot));
    window.show();
    return QApplication::exec();
}
