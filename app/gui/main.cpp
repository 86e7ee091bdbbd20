// kvscope: the desktop app. The command line is read in gui_options.cpp and
// what the app does by itself in scripted_run.cpp; everything shown lives
// in ui/.
#include <variant>

#include <QApplication>

#include "app/gui/bench_paint.h"
#include "app/gui/gui_options.h"
#include "app/gui/headless.h"
#include "app/gui/scripted_run.h"
#include "ui/playground/playground_panel.h"
#include "ui/shell/app_info.h"
#include "ui/shell/main_window.h"
#include "ui/shell/theme.h"

int main(int argc, char** argv) {
    using namespace kvscope;
    if (gui::needsNoDisplay(argc, argv) && qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM"))
        qputenv("QT_QPA_PLATFORM", "offscreen");
    else if (gui::displayMissing())
        return gui::explainHeadless();
    QApplication app(argc, argv);
    QApplication::setOrganizationName(QStringLiteral("kvscope"));
    QApplication::setApplicationName(QStringLiteral("kvscope"));
    // The installed desktop entry's name: desktops match the window to its
    // entry and icon by it (the Wayland app id).
    QGuiApplication::setDesktopFileName(QStringLiteral(KVSCOPE_APP_ID));
    QApplication::setApplicationVersion(ui::appVersion());
    QApplication::setWindowIcon(ui::appIcon());

    const auto parsed = gui::parseOptions(app);
    if (const int* exitCode = std::get_if<int>(&parsed))
        return *exitCode;
    const auto& options = std::get<gui::GuiOptions>(parsed);
    if (options.benchPaint)
        return gui::run_bench_paint(*options.benchPaint);

    ui::applyTheme(options.theme);
    ui::MainWindow window;
    if (options.windowSize)
        window.resize(*options.windowSize);
    if (options.scenario) {
        window.playground()->runScenario(*options.scenario);
        window.showPlayground();
    }
    if (options.server)
        window.connectToServer(*options.server);
    if (const auto exitCode = gui::startScriptedRun(window, options))
        return *exitCode;
    return QApplication::exec();
}
