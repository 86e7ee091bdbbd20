#include "ui/shell/theme.h"

#include <QApplication>
#include <QPalette>
#include <QSettings>
#include <QStyle>
#include <QStyleFactory>

namespace kvscope::ui {
namespace {

const QString kThemeKey = QStringLiteral("ui/theme");
const QString kFusion = QStringLiteral("Fusion");

// What the platform gave the application before any theme was applied,
// for going back to System without a restart.
struct PlatformLook {
    QString style;
    QPalette palette;
};

const PlatformLook& platformLook() {
    static const PlatformLook look{QApplication::style()->name(), QApplication::palette()};
    return look;
}

Theme& current() {
    static Theme theme = Theme::System;
    return theme;
}

QPalette darkPalette() {
    const QColor window(0x2d, 0x2f, 0x33);
    const QColor base(0x1f, 0x21, 0x24);
    const QColor text(0xe8, 0xea, 0xed);
    const QColor dimmed(0x86, 0x8b, 0x92);   // disabled: WCAG asks no contrast of it
    const QColor quieter(0xa4, 0xaa, 0xb1);  // placeholders, notes: 5:1 on the window
    const QColor accent(0x4a, 0x9e, 0xe8);
    QPalette p;
    p.setColor(QPalette::Window, window);
    p.setColor(QPalette::WindowText, text);
    p.setColor(QPalette::Base, base);
    p.setColor(QPalette::AlternateBase, window);
    p.setColor(QPalette::ToolTipBase, base);
    p.setColor(QPalette::ToolTipText, text);
    p.setColor(QPalette::PlaceholderText, quieter);
    p.setColor(QPalette::Text, text);
    p.setColor(QPalette::Button, window.lighter(115));
    p.setColor(QPalette::ButtonText, text);
    p.setColor(QPalette::BrightText, QColor(0xff, 0x6e, 0x6e));
    p.setColor(QPalette::Light, window.lighter(150));
    p.setColor(QPalette::Midlight, window.lighter(125));
    p.setColor(QPalette::Mid, window.darker(130));
    p.setColor(QPalette::Dark, window.darker(160));
    p.setColor(QPalette::Shadow, QColor(0x0a, 0x0a, 0x0a));
    p.setColor(QPalette::Highlight, accent);
    p.setColor(QPalette::HighlightedText, QColor(0x10, 0x10, 0x10));
    p.setColor(QPalette::Link, accent);
    p.setColor(QPalette::LinkVisited, accent.lighter(130));
    for (QPalette::ColorRole role : {QPalette::WindowText, QPalette::Text, QPalette::ButtonText})
        p.setColor(QPalette::Disabled, role, dimmed);
    p.setColor(QPalette::Disabled, QPalette::Button, window);
    return p;
}

// Fusion's own light palette, with placeholders and notes readable (its
// placeholder is half-transparent text: 3.9:1 on the window, under WCAG's
// 4.5:1 for body text).
QPalette lightPalette() {
    QPalette p = QApplication::style()->standardPalette();
    p.setColor(QPalette::PlaceholderText, QColor(0x5f, 0x63, 0x68));
    return p;
}

} // namespace

QString themeName(Theme theme) {
    switch (theme) {
    case Theme::System: return QStringLiteral("system");
    case Theme::Light: return QStringLiteral("light");
    case Theme::Dark: return QStringLiteral("dark");
    }
    return {};
}

std::optional<Theme> parseTheme(const QString& name) {
    for (Theme theme : {Theme::System, Theme::Light, Theme::Dark})
        if (name == themeName(theme))
            return theme;
    return std::nullopt;
}

void applyTheme(Theme theme) {
    const PlatformLook& platform = platformLook();
    if (theme == Theme::System) {
        QApplication::setStyle(platform.style);
        QApplication::setPalette(platform.palette);
    } else {
        QApplication::setStyle(kFusion);
        QApplication::setPalette(theme == Theme::Dark ? darkPalette() : lightPalette());
    }
    current() = theme;
}

Theme currentTheme() { return current(); }

Theme savedTheme() { return parseTheme(QSettings().value(kThemeKey).toString()).value_or(Theme::System); }

void saveTheme(Theme theme) { QSettings().setValue(kThemeKey, themeName(theme)); }

} // namespace kvscope::ui
