#include "ui/block_map_legend.h"

#include <QHBoxLayout>
#include <QLabel>
#include <QPixmap>

#include "ui/block_look.h"

namespace kvscope::ui {
namespace {

constexpr int kSwatch = 18;
constexpr QRgb kSampleOwner = 0xFF4E79A7; // the first sequence colour

QPixmap swatch(const CellLook& look) {
    QImage image(kSwatch, kSwatch, QImage::Format_RGB32);
    image.fill(block_colors::kBackground);
    CellPainter(image).paint(image.rect(), look);
    return QPixmap::fromImage(image);
}

void addEntry(QHBoxLayout* row, const CellLook& look, const QString& text, const QString& tip) {
    auto* icon = new QLabel;
    icon->setPixmap(swatch(look));
    auto* label = new QLabel(text);
    icon->setToolTip(tip);
    label->setToolTip(tip);
    row->addWidget(icon);
    row->addWidget(label);
    row->addSpacing(12);
}

} // namespace

BlockMapLegend::BlockMapLegend(QWidget* parent) : QWidget(parent) {
    auto* row = new QHBoxLayout(this);
    row->setContentsMargins(0, 0, 0, 0);
    row->setSpacing(4);
    addEntry(row, {BlockState::Free, 0, 0.0}, tr("Free"), tr("No holder, nothing kept"));
    addEntry(row, {BlockState::Used, kSampleOwner, 0.6}, tr("Used (fill from the bottom)"),
             tr("One sequence holds it; the solid part is the share of slots holding tokens"));
    addEntry(row, {BlockState::Shared, kSampleOwner, 1.0}, tr("Shared"),
             tr("Held by several sequences (fork or prefix-cache hit); coloured as its first owner"));
    addEntry(row, {BlockState::Reserved, kSampleOwner, 0.0}, tr("Reserved (not yet written)"),
             tr("Contiguous mode: reserved up front for tokens that may never come"));
    addEntry(row, {BlockState::CachedFree, 0, 1.0}, tr("Cached free"),
             tr("No holder, but its full content stays in the prefix cache until evicted"));
    row->addStretch(1);
}

} // namespace kvscope::ui
