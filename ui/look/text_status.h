// Text colours that say how something went (an error, a success, a note
// that matters less), each in a light and a dark version, so that they read
// in either theme (WCAG 4.5:1 on the palette's Window and Base); a colour
// of its own (a chat's) made readable on a background.
// Header-only; includes only Qt.
#pragma once

#include <algorithm>
#include <cmath>
#include <optional>

#include <QColor>
#include <QEvent>
#include <QLabel>
#include <QPalette>
#include <QVariant>

namespace kvscope::ui {

// A palette whose windows are dark (View > Theme > Dark, or a dark platform).
inline bool isDarkPalette(const QPalette& palette) { return palette.color(QPalette::Window).lightness() < 128; }

// WCAG's minimum contrast for body text, and the ratio (sRGB relative
// luminance, WCAG 2.x).
inline constexpr double kReadableContrast = 4.5;

inline double relativeLuminance(const QColor& c) {
    const auto linear = [](double v) { return v <= 0.04045 ? v / 12.92 : std::pow((v + 0.055) / 1.055, 2.4); };
    return 0.2126 * linear(c.redF()) + 0.7152 * linear(c.greenF()) + 0.0722 * linear(c.blueF());
}

inline double contrastRatio(const QColor& a, const QColor& b) {
    const double la = relativeLuminance(a);
    const double lb = relativeLuminance(b);
    return (std::max(la, lb) + 0.05) / (std::min(la, lb) + 0.05);
}

// `colour`, lightened on a dark background or darkened on a light one
// until it reads on `background` (kReadableContrast), its hue kept.
inline QColor readableColour(QColor colour, const QColor& background) {
    const bool darkBackground = relativeLuminance(background) < 0.18;
    for (int i = 0; i < 20 && contrastRatio(colour, background) < kReadableContrast; ++i)
        colour = darkBackground ? colour.lighter(112) : colour.darker(112);
    return colour;
}

enum class TextStatus { Error, Success, Muted };

// Muted is the palette's PlaceholderText: its light and dark versions are
// the theme's (ui/shell/theme.cpp).
inline QColor statusTextColour(TextStatus status, const QPalette& palette) {
    const bool dark = isDarkPalette(palette);
    switch (status) {
    case TextStatus::Error: return dark ? QColor(0xff, 0x8a, 0x80) : QColor(0xb7, 0x1c, 0x1c);
    case TextStatus::Success: return dark ? QColor(0x81, 0xc7, 0x84) : QColor(0x1b, 0x5e, 0x20);
    case TextStatus::Muted: break;
    }
    return palette.color(QPalette::PlaceholderText);
}

namespace detail {

inline constexpr const char* kTextStatus = "kvscopeTextStatus";

// The label's text colour from its status and the palette it inherits.
inline void applyTextStatus(QLabel& label) {
    const QVariant status = label.property(kTextStatus);
    QPalette palette = label.palette(); // its Window and the rest inherited
    if (status.isValid())
        palette.setColor(QPalette::WindowText, statusTextColour(static_cast<TextStatus>(status.toInt()), palette));
    else
        palette = QPalette(); // inherit the parent's again
    label.setPalette(palette);
}

// Colours the label again when the theme changes.
class TextStatusFollower : public QObject {
public:
    explicit TextStatusFollower(QLabel& label) : QObject(&label) {
        setObjectName(QStringLiteral("textStatusFollower"));
        label.installEventFilter(this);
    }
    bool eventFilter(QObject* watched, QEvent* event) override {
        // Setting the same palette again sends no second PaletteChange.
        if (event->type() == QEvent::PaletteChange) {
            auto& label = static_cast<QLabel&>(*watched);
            if (label.property(kTextStatus).isValid())
                applyTextStatus(label);
        }
        return false;
    }
};

} // namespace detail

// Colours `label`'s text for `status` (nullopt: the palette's own text
// colour), in the light or the dark version, now and after every theme change.
inline void setTextStatus(QLabel& label, std::optional<TextStatus> status) {
    if (!label.findChild<detail::TextStatusFollower*>(QStringLiteral("textStatusFollower"), Qt::FindDirectChildrenOnly))
        new detail::TextStatusFollower(label);
    label.setProperty(detail::kTextStatus, status ? QVariant(static_cast<int>(*status)) : QVariant());
    detail::applyTextStatus(label);
}

} // namespace kvscope::ui
