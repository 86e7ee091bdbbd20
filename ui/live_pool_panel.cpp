#include "ui/live_pool_panel.h"

#include <QLabel>
#include <QScrollArea>
#include <QScrollBar>
#include <QVBoxLayout>

#include "ui/block_map_legend.h"
#include "ui/block_map_widget.h"
#include "ui/model_info_panel.h"

namespace kvscope::ui {
namespace {

QString percent(double fraction) { return QStringLiteral("%1%").arg(fraction * 100, 0, 'f', 1); }

QString describe(const EngineSnapshot& s) {
    const FragmentationStats& f = s.pool->fragmentation;
    return QObject::tr("%1 of %2 blocks used (%3 of slots hold tokens) \u00b7 %4 cached \u00b7 waste: internal %5, "
                       "reserved %6, external %7 \u00b7 %8 running, %9 waiting, %10 swapped \u00b7 in %11")
        .arg(f.used_blocks)
        .arg(f.total_blocks)
        .arg(percent(f.token_occupancy()))
        .arg(f.cached_free_blocks)
        .arg(percent(f.internal_waste()), percent(f.reserved_waste()), percent(f.external_fragmentation()))
        .arg(s.running)
        .arg(s.waiting)
        .arg(s.swapped)
        .arg(kvLocationText(s.device));
}

} // namespace

LivePoolPanel::LivePoolPanel(QWidget* parent)
    : QWidget(parent), map_(new BlockMapWidget), figures_(new QLabel(tr("No model loaded"))) {
    map_->setObjectName(QStringLiteral("liveBlockMap"));
    figures_->setObjectName(QStringLiteral("poolFigures"));
    figures_->setWordWrap(true);
    auto* layout = new QVBoxLayout(this);
    layout->addWidget(map_, 1);
    // The legend scrolls rather than widen the window beyond a laptop screen.
    auto* legend = new QScrollArea;
    legend->setWidget(new BlockMapLegend);
    legend->setFrameShape(QFrame::NoFrame);
    legend->setVerticalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    legend->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Fixed);
    legend->setFixedHeight(legend->widget()->sizeHint().height() + legend->horizontalScrollBar()->sizeHint().height());
    layout->addWidget(legend);
    layout->addWidget(figures_);
}

void LivePoolPanel::setSnapshot(std::shared_ptr<const EngineSnapshot> snapshot, SequencePalette palette) {
    if (!snapshot || !snapshot->pool)
        return;
    figures_->setText(describe(*snapshot));
    map_->setSequencePalette(std::move(palette));
    map_->setSnapshot(snapshot->pool);
}

QString LivePoolPanel::figures() const { return figures_->text(); }

} // namespace kvscope::ui
