// How the desktop app reports a failure on the terminal, for the command
// line's checks and the scripted run alike.
#pragma once

#include <cstdio>

#include <QString>

namespace kvscope::gui {

// Prints "kvscope: <message>" on stderr and returns 1, the exit code of
// every such failure.
inline int fail(const QString& message) {
    std::fprintf(stderr, "kvscope: %s\n", qPrintable(message));
    return 1;
}

} // namespace kvscope::gui
