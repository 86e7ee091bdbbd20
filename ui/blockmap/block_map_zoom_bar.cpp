#include "ui/blockmap/block_map_zoom_bar.h"

#include <QHBoxLayout>
#include <QLabel>
#include <QToolButton>
#include <QVBoxLayout>

#include "ui/blockmap/block_map_widget.h"

namespace kvscope::ui {
namespace {

QToolButton* zoomButton(const QString& text, const QString& tip, const char* name) {
    auto* button = new QToolButton;
    button->setText(text);
    button->setToolTip(tip);
    button->setObjectName(QString::fromLatin1(name));
    return button;
}

} // namespace

BlockMapZoomBar::BlockMapZoomBar(BlockMapWidget* map, QWidget* parent)
    : QWidget(parent),
      map_(map),
      out_(zoomButton(QStringLiteral("\u2212"), tr("Zoom out: more blocks per cell (wheel down, -)"), "zoomOut")),
      in_(zoomButton(QStringLiteral("+"),
                     tr("Zoom in, down to single blocks (wheel up, +); drag the map or use the minimap to pan"),
                     "zoomIn")),
      fit_(zoomButton(tr("Fit"), tr("Show the whole pool (0)"), "zoomFit")),
      scale_(new QLabel) {
    scale_->setObjectName(QStringLiteral("mapScale"));
    scale_->setWordWrap(true);
    auto* buttons = new QHBoxLayout;
    buttons->setContentsMargins(0, 0, 0, 0);
    buttons->addWidget(out_);
    buttons->addWidget(in_);
    buttons->addWidget(fit_);
    buttons->addStretch(1);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addLayout(buttons);
    layout->addWidget(scale_);
    connect(out_, &QToolButton::clicked, map_, &BlockMapWidget::zoomOut);
    connect(in_, &QToolButton::clicked, map_, &BlockMapWidget::zoomIn);
    connect(fit_, &QToolButton::clicked, map_, &BlockMapWidget::zoomToFit);
    connect(map_, &BlockMapWidget::viewChanged, this, &BlockMapZoomBar::refresh);
    refresh();
}

QString BlockMapZoomBar::scaleText() const { return scale_->text(); }

void BlockMapZoomBar::refresh() {
    const bool zoomed = map_->zoomStep() > 0;
    out_->setEnabled(zoomed);
    fit_->setEnabled(zoomed);
    in_->setEnabled(map_->canZoomIn());
    scale_->setText(map_->scaleText());
}

} // namespace kvscope::ui
