#include "ui/blockmap/sequence_palette.h"

#include <array>
#include <cmath>

#include <QColor>

namespace kvscope::ui {
namespace {

// Tableau 10 minus its grey (grey means "free" on a block map) and with a
// darker pink, so the pale tint drawn for empty slots stays visible.
constexpr std::array<QRgb, 10> kFirstColors = {
    0xFF4E79A7, 0xFFF28E2B, 0xFFE15759, 0xFF59A14F, 0xFFB07AA1,
    0xFF76B7B2, 0xFFEDC948, 0xFF9C755F, 0xFFD37295, 0xFF499894,
};

// Past the table: hues a golden angle apart never repeat and stay far from
// their neighbours in id order.
QRgb golden_angle_color(SeqId seq) {
    const double hue = std::fmod(static_cast<double>(seq) * 137.508, 360.0) / 360.0;
    return QColor::fromHsvF(static_cast<float>(hue), 0.62f, 0.82f).rgb();
}

} // namespace

SequencePalette::SequencePalette()
    : namer_([](SeqId seq) { return QStringLiteral("seq %1").arg(seq); }) {}

SequencePalette::SequencePalette(Namer namer, Colorer colorer, Namer cacheNamer)
    : namer_(std::move(namer)), colorer_(std::move(colorer)), cacheNamer_(std::move(cacheNamer)) {}

QRgb SequencePalette::color(SeqId seq) const { return colorer_ ? colorer_(seq) : defaultColor(seq); }

QRgb SequencePalette::defaultColor(SeqId seq) {
    return seq < kFirstColors.size() ? kFirstColors[seq] : golden_angle_color(seq);
}

} // namespace kvscope::ui
