#include "ui/shell/app_info.h"

#include <array>

#include <QPainter>
#include <QPixmap>

namespace kvscope::ui {
namespace {

// 4 x 4 cells, as in resources/kvscope.svg: two sequences, a shared block,
// free blocks.
constexpr std::array<QRgb, 16> kCells = {
    0xFF4E79A7, 0xFF4E79A7, 0xFF4E79A7, 0xFFE3E6EB, //
    0xFFF28E2B, 0xFF2B4460, 0xFFE3E6EB, 0xFF4E79A7, //
    0xFFE3E6EB, 0xFFF28E2B, 0xFFF28E2B, 0xFFE3E6EB, //
    0xFF8E959E, 0xFFE3E6EB, 0xFFF28E2B, 0xFFE3E6EB,
};

QPixmap iconPixmap(int size) {
    QPixmap pixmap(size, size);
    pixmap.fill(Qt::transparent);
    QPainter painter(&pixmap);
    painter.setRenderHint(QPainter::Antialiasing);
    painter.setPen(Qt::NoPen);
    painter.setBrush(QColor(0x26, 0x32, 0x38));
    painter.drawRoundedRect(QRectF(0, 0, size, size), size * 0.16, size * 0.16);
    const double pitch = size * 0.8 / 4.0;
    const double gap = pitch * 0.14;
    for (std::size_t i = 0; i < kCells.size(); ++i) {
        const double x = size * 0.1 + static_cast<double>(i % 4) * pitch;
        const double y = size * 0.1 + static_cast<double>(i / 4) * pitch;
        painter.setBrush(QColor::fromRgb(kCells[i]));
        painter.drawRect(QRectF(x, y, pitch - gap, pitch - gap));
    }
    return pixmap;
}

} // namespace

QString appVersion() { return QStringLiteral(KVSCOPE_VERSION); }

QIcon appIcon() {
    QIcon icon;
    for (int size : {16, 32, 64, 128})
        icon.addPixmap(iconPixmap(size));
    return icon;
}

} // namespace kvscope::ui
