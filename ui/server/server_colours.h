// The connected view's signal colours (the link's dot, a refusal's text),
// each in a shade for a light and for a dark window background, so that
// they read in either theme (ui/shell/theme.h).
#pragma once

#include <QColor>
#include <QPalette>

#include "net/attach/remote_sample.h"

namespace kvscope::ui {

inline bool isDarkPalette(const QPalette& palette) { return palette.color(QPalette::Window).lightness() < 128; }

// Live green, Connecting amber, Reconnecting red.
inline QColor linkColour(attach::LinkState link, const QPalette& palette) {
    const bool dark = isDarkPalette(palette);
    switch (link) {
    case attach::LinkState::Live: return dark ? QColor(0x5f, 0xd3, 0x8d) : QColor(0x2e, 0x8b, 0x57);
    case attach::LinkState::Connecting: return dark ? QColor(0xf0, 0xc0, 0x4a) : QColor(0xb8, 0x86, 0x0b);
    case attach::LinkState::Reconnecting: return dark ? QColor(0xff, 0x7b, 0x6b) : QColor(0xc0, 0x39, 0x2b);
    }
    return palette.color(QPalette::WindowText);
}

// Text that says something was refused: red, as readable as body text
// (WCAG 4.5:1) on either theme's window.
inline QColor errorTextColour(const QPalette& palette) {
    return isDarkPalette(palette) ? QColor(0xff, 0x7b, 0x6b) : QColor(0xb0, 0x2a, 0x1e);
}

} // namespace kvscope::ui
