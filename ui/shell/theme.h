#pragma once

#include <optional>

#include <QString>

namespace kvscope::ui {

// The window's colours: the platform's own (System), or Qt's Fusion style
// with a light or a dark palette. Widgets that paint their own colours (the
// plots, the block map) take them from the palette, so switching the theme
// at run time repaints everything.
enum class Theme { System, Light, Dark };

// "system", "light", "dark" (the words of --theme and of the settings file).
QString themeName(Theme theme);
std::optional<Theme> parseTheme(const QString& name);

// Applies `theme` to the running QApplication. Call once before the first
// window exists (System keeps the platform's style and palette, which are
// remembered then), and again whenever the user picks another.
void applyTheme(Theme theme);
// The theme last applied.
Theme currentTheme();

// The user's choice, kept in QSettings between runs; System when none was
// saved or the saved word is unknown.
Theme savedTheme();
void saveTheme(Theme theme);

} // namespace kvscope::ui
