#include "ui/server/prefix_cache_widget.h"

#include <algorithm>

#include <QPainter>

#include "ui/blockmap/block_look.h"

namespace kvscope::ui {
namespace {

constexpr int kMaxBarWidth = 14;
constexpr int kBarGap = 2;
constexpr int kAxisText = 16;

} // namespace

PrefixCacheWidget::PrefixCacheWidget(QWidget* parent) : QWidget(parent) {
    setObjectName(QStringLiteral("prefixCache"));
    setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Fixed);
}

void PrefixCacheWidget::setChainLengths(std::vector<std::uint32_t> lengths) {
    lengths_ = std::move(lengths);
    update();
}

QSize PrefixCacheWidget::sizeHint() const { return {320, 110}; }

void PrefixCacheWidget::paintEvent(QPaintEvent*) {
    QPainter painter(this);
    const QRect plot = rect().adjusted(0, 0, 0, -kAxisText);
    painter.setPen(palette().color(QPalette::Text));
    if (lengths_.empty()) {
        painter.drawText(plot, Qt::AlignCenter, tr("No cached prefixes"));
        return;
    }
    const std::uint32_t deepest = std::max<std::uint32_t>(1, *std::ranges::max_element(lengths_));
    const int n = static_cast<int>(lengths_.size());
    const int barWidth = std::clamp(plot.width() / n - kBarGap, 1, kMaxBarWidth);
    for (int i = 0; i < n; ++i) {
        const int h = std::max(1, static_cast<int>(static_cast<double>(plot.height()) *
                                                   lengths_[static_cast<std::size_t>(i)] / deepest));
        painter.fillRect(QRect(i * (barWidth + kBarGap), plot.bottom() - h + 1, barWidth, h),
                         QColor::fromRgb(block_colors::kCachedFree));
    }
    painter.drawText(QRect(0, plot.bottom() + 1, width(), kAxisText), Qt::AlignLeft | Qt::AlignVCenter,
                     tr("%1 prefix chain%2, longest first: %3 blocks deep at most")
                         .arg(n)
                         .arg(n == 1 ? "" : "s")
                         .arg(deepest));
}

} // namespace kvscope::ui
