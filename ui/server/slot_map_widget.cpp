#include "ui/server/slot_map_widget.h"

#include <algorithm>

#include <QHelpEvent>
#include <QPainter>
#include <QToolTip>

#include "ui/blockmap/block_look.h"
#include "ui/blockmap/sequence_palette.h"

namespace kvscope::ui {
namespace {

constexpr int kRowHeight = 18;
constexpr int kRowGap = 4;
constexpr int kLabelWidth = 56;
constexpr int kMinBarWidth = 120;
constexpr QRgb kIdleHeld = 0xFF9AA3AE; // an idle slot's kept prompt: held, but no request is using it

} // namespace

SlotMapWidget::SlotMapWidget(QWidget* parent) : QWidget(parent) {
    setObjectName(QStringLiteral("slotMap"));
    setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Fixed);
}

void SlotMapWidget::setRows(std::vector<SlotRow> rows) {
    const bool resized = rows.size() != rows_.size();
    rows_ = std::move(rows);
    if (resized)
        updateGeometry();
    update();
}

QSize SlotMapWidget::sizeHint() const {
    const int n = std::max<int>(1, static_cast<int>(rows_.size()));
    return {kLabelWidth + 4 * kMinBarWidth, n * (kRowHeight + kRowGap)};
}

QSize SlotMapWidget::minimumSizeHint() const { return {kLabelWidth + kMinBarWidth, sizeHint().height()}; }

QRect SlotMapWidget::barRect(int row) const {
    std::uint32_t longest = 1;
    for (const SlotRow& r : rows_)
        longest = std::max(longest, r.n_ctx);
    const int full = std::max(1, width() - kLabelWidth - 1);
    const auto& r = rows_[static_cast<std::size_t>(row)];
    const int w = std::max(1, static_cast<int>(static_cast<double>(full) * r.n_ctx / longest));
    return {kLabelWidth, row * (kRowHeight + kRowGap), w, kRowHeight};
}

int SlotMapWidget::rowAt(int y) const {
    const int row = y / (kRowHeight + kRowGap);
    return row >= 0 && row < static_cast<int>(rows_.size()) ? row : -1;
}

void SlotMapWidget::paintEvent(QPaintEvent*) {
    QPainter painter(this);
    for (int i = 0; i < static_cast<int>(rows_.size()); ++i) {
        const SlotRow& r = rows_[static_cast<std::size_t>(i)];
        const QRect bar = barRect(i);
        painter.setPen(palette().color(QPalette::Text));
        painter.drawText(QRect(0, bar.top(), kLabelWidth - 6, kRowHeight), Qt::AlignRight | Qt::AlignVCenter,
                         tr("slot %1").arg(r.id));
        const QRgb owner = SequencePalette::defaultColor(static_cast<SeqId>(r.id));
        const int held = r.n_ctx ? static_cast<int>(static_cast<double>(bar.width()) * r.tokens / r.n_ctx) : 0;
        // The reservation: hollow, in the owner's colour, as the block map's Reserved cells.
        painter.fillRect(bar, QColor::fromRgb(block_colors::reserved_inside(owner)));
        painter.fillRect(QRect(bar.topLeft(), QSize(std::min(held, bar.width()), bar.height())),
                         QColor::fromRgb(r.busy ? owner : kIdleHeld));
        painter.setPen(QColor::fromRgb(owner));
        painter.drawRect(bar.adjusted(0, 0, -1, -1));
    }
}

bool SlotMapWidget::event(QEvent* e) {
    if (e->type() == QEvent::ToolTip) {
        const auto* help = static_cast<QHelpEvent*>(e);
        const int row = rowAt(help->pos().y());
        if (row >= 0) {
            const SlotRow& r = rows_[static_cast<std::size_t>(row)];
            const QString unused = tr("\n%1 tokens reserved but unused").arg(r.reserved_free);
            QToolTip::showText(help->globalPos(), QString::fromStdString(r.text) + unused, this);
        } else
            QToolTip::hideText();
        return true;
    }
    return QWidget::event(e);
}

} // namespace kvscope::ui
