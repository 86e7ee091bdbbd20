// The scripted run: what kvscope does by itself once its window is built,
// as the command line asks: the requested view, the model and its
// scripted chat turns and workload, and a --screenshot taken at the right
// moment (then quitting).
#pragma once

#include <optional>

#include "app/gui/gui_options.h"
#include "ui/shell/main_window.h"

namespace kvscope::gui {

// Starts the run on `window` (built, sized and connected as `options` ask),
// or just shows the window when there is no --screenshot. Returns the exit
// code when the run is already over (a screenshot with nothing to wait
// for), nullopt when the event loop is to run it.
std::optional<int> startScriptedRun(ui::MainWindow& window, const GuiOptions& options);

} // namespace kvscope::gui
