#include "app/gui/headless.h"

#include <cstdio>
#include <string_view>

#include <QtGlobal>

namespace kvscope::gui {

// Runs that never show a window must work with no display, so
// QT_QPA_PLATFORM is set before QApplication exists, which is before
// QCommandLineParser can run: hence this look at argv (the option names are
// gui_options.cpp's).
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

} // namespace kvscope::gui
