// kvscope without a display: the runs that need none, and what to say when
// a window is wanted but cannot open. Both are decided before QApplication
// exists.
#pragma once

namespace kvscope::gui {

// Whether argv asks for a run that never shows a window: a screenshot, a
// benchmark, or text for the terminal (--help, --version).
bool needsNoDisplay(int argc, char** argv);

// Whether a window cannot open for want of a display (Linux only).
bool displayMissing();

// Prints the headless commands that work instead; returns the exit code, 2.
int explainHeadless();

} // namespace kvscope::gui
