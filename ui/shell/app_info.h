#pragma once

#include <QIcon>
#include <QString>

namespace kvscope::ui {

QString appVersion(); // the CMake project version, e.g. "0.1.0"
// The app icon (a small block map), drawn in code: Qt's SVG image plugin is
// not a dependency. resources/kvscope.svg is the same picture for desktops.
QIcon appIcon();

} // namespace kvscope::ui
