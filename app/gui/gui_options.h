// kvscope's command line: every option the desktop app takes, checked into
// one plain struct before any window exists.
#pragma once

#include <cstdint>
#include <optional>
#include <variant>

#include <QSize>
#include <QString>
#include <QStringList>

#include "app/gui/bench_paint.h"
#include "ui/bridge/model_source.h"
#include "ui/playground/playground_model.h"
#include "ui/server/connect_dialog.h"
#include "ui/shell/main_window.h"
#include "ui/shell/theme.h"

class QCoreApplication;

namespace kvscope::gui {

// What --tab and --show ask the window to show, applied once the model is
// in place (loading one shows the chat).
struct RequestedView {
    std::optional<ui::MainWindow::Page> page;
    QString dock; // empty: none asked for
};

struct GuiOptions {
    // --bench-paint and its numbers. When set, nothing below was read: the
    // benchmark shows no window, so the window's options do not apply.
    std::optional<BenchPaintOptions> benchPaint;

    std::optional<ui::ModelSource> source; // --model or --synthetic
    QStringList prompts;                   // --prompt, one per turn
    std::optional<int> afterMs;            // --after-ms
    std::optional<std::uint32_t> workload; // --workload: its number of requests
    bool compare = false;                  // --compare
    std::optional<ui::Scenario> scenario;  // --scenario
    std::optional<QSize> windowSize;       // --window-size, else a screenshot's size, else none
    ui::Theme theme = ui::Theme::System;   // --theme, else the one kept between runs
    RequestedView view;                    // --tab and --show
    std::optional<ui::ConnectText> server; // --connect and its options, already checked
    std::optional<QString> screenshot;     // --screenshot's file
};

// Parses the command line and checks every value, also applying
// --log-level at once. Returns the options, or the exit code after the
// error has been printed ("kvscope: ..."). --help, --version and an
// unknown option end the process inside, as QCommandLineParser does.
std::variant<GuiOptions, int> parseOptions(const QCoreApplication& app);

} // namespace kvscope::gui
