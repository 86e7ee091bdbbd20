#include "ui/blockmap/live_pool_panel.h"

#include <algorithm>

#include <QHBoxLayout>
#include <QLabel>
#include <QStringList>
#include <QVBoxLayout>

#include "ui/blockmap/block_map_legend.h"
#include "ui/blockmap/block_map_widget.h"
#include "ui/blockmap/block_map_zoom_bar.h"
#include "ui/settings/model_info_panel.h"
#include "ui/blockmap/snapshot_replay_bar.h"

namespace kvscope::ui {
namespace {

QString percent(double fraction) { return QStringLiteral("%1%").arg(fraction * 100, 0, 'f', 1); }

// One line per kind of layer: its blocks, the waste in them, its cached
// blocks and those its window freed (the engine's definitions over the
// lane's blocks: block_lanes.h).
QString describeLanes(const std::vector<BlockLane>& lanes) {
    QStringList lines;
    for (const BlockLane& lane : lanes) {
        if (lane.free_pool)
            continue;
        const FragmentationStats& f = lane.figures;
        const double laneSlots = static_cast<double>(std::max<std::size_t>(f.used_blocks * f.block_size, 1));
        QString line = QObject::tr("%1: %2 used (internal waste %3 of their slots, reserved %4) \u00b7 %5 cached")
                           .arg(QString::fromStdString(lane.kind.title()), counted(f.used_blocks, "block", "blocks"),
                                percent(static_cast<double>(f.internal_waste_slots) / laneSlots),
                                percent(static_cast<double>(f.reserved_waste_slots) / laneSlots))
                           .arg(f.cached_free_blocks);
        if (lane.kind.window > 0)
            line += QObject::tr(" \u00b7 %1 freed by the window, not taken since").arg(lane.left_window);
        lines << line;
    }
    return lines.join(QLatin1Char('\n'));
}

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

bool hasPool(const std::shared_ptr<const EngineSnapshot>& snapshot) { return snapshot && snapshot->pool; }

} // namespace

LivePoolPanel::LivePoolPanel(QWidget* parent)
    : QWidget(parent),
      map_(new BlockMapWidget),
      legend_(new BlockMapLegend),
      replayBar_(new SnapshotReplayBar),
      zoomBar_(new BlockMapZoomBar(map_)),
      figures_(new QLabel),
      idleText_(tr("No model loaded")) {
    map_->setObjectName(QStringLiteral("liveBlockMap"));
    legend_->setObjectName(QStringLiteral("blockMapLegend"));
    figures_->setObjectName(QStringLiteral("poolFigures"));
    figures_->setWordWrap(true);
    setIdleText(idleText_);
    auto* layout = new QVBoxLayout(this);
    layout->addWidget(map_, 1);
    layout->addWidget(legend_); // wraps onto more rows when narrow
    auto* controls = new QHBoxLayout; // the replay over time, the zoom over the pool
    controls->addWidget(replayBar_, 3);
    controls->addWidget(zoomBar_, 1, Qt::AlignTop);
    layout->addLayout(controls);
    layout->addWidget(figures_);
    connect(map_, &BlockMapWidget::viewChanged, this,
            [this] { legend_->setRunLength(map_->snapshot() ? map_->cells().scale.perCell : 1); });
    connect(replayBar_, &SnapshotReplayBar::picked, this, &LivePoolPanel::pick);
    connect(replayBar_, &SnapshotReplayBar::liveRequested, this, &LivePoolPanel::goLive);
    replayBar_->display(replay_);
}

void LivePoolPanel::setSnapshot(std::shared_ptr<const EngineSnapshot> snapshot, SequencePalette palette) {
    if (!hasPool(snapshot))
        return;
    livePalette_ = std::move(palette);
    liveFade_.observe(*snapshot->pool, snapshot->time_s);
    replay_.add(std::move(snapshot));
    if (replay_.live())
        showShown();
    else if (!hiddenInWindow())
        replayBar_->display(replay_);
}

void LivePoolPanel::addSteps(const SnapshotBatch& steps) {
    for (const auto& step : steps)
        if (hasPool(step)) {
            replay_.add(step);
            liveFade_.observe(*step->pool, step->time_s);
        }
    if (!hiddenInWindow())
        replayBar_->display(replay_); // the live picture comes with the next setSnapshot
}

void LivePoolPanel::clear() {
    replay_.clear();
    liveFade_.clear();
    livePalette_ = SequencePalette();
    stale_ = false;
    map_->setSnapshot(nullptr);
    figures_->setText(idleText_);
    replayBar_->display(replay_);
}

void LivePoolPanel::setIdleText(const QString& text) {
    idleText_ = text;
    map_->setEmptyText(text);
    if (!map_->snapshot())
        figures_->setText(text);
}

void LivePoolPanel::pick(int index) {
    replay_.pick(static_cast<std::size_t>(std::max(index, 0)));
    showShown();
}

void LivePoolPanel::goLive() {
    replay_.goLive();
    showShown();
}

// Hidden behind another tab or dock, the panel still hands each snapshot to
// its map (which paints only when shown) but words nothing until it shows
// again: re-laying out a wrapped line of figures ~30 times a second, for
// nobody to see, was much of the UI thread's work under a busy workload.
// (Hidden by its window's tabs or docks, that is: a window not shown yet,
// a test's panel, is worded as it goes.)
bool LivePoolPanel::hiddenInWindow() const {
    for (const QWidget* w = this; w && !w->isWindow(); w = w->parentWidget())
        if (w->isHidden())
            return true;
    return false;
}

void LivePoolPanel::showEvent(QShowEvent* event) {
    QWidget::showEvent(event);
    if (stale_)
        showShown();
}

void LivePoolPanel::showShown() {
    const auto shown = replay_.shown();
    if (shown) {
        map_->setSequencePalette(!replay_.live() && paletteMaker_ ? paletteMaker_(*shown) : livePalette_);
        map_->setSnapshot(shown->pool);
        if (replay_.live())
            map_->setWindowFade(liveFade_, shown->time_s, true);
        else
            map_->setWindowFade(fadeAt(replay_, replay_.position()), shown->time_s, false);
    }
    stale_ = hiddenInWindow();
    if (stale_)
        return;
    replayBar_->display(replay_);
    if (!shown)
        return;
    // Window groups free blocks when paged; a contiguous window group is a
    // ring that reuses its own.
    const KvGroups& groups = shown->pool->layout.groups();
    legend_->setShowsWindow(groups.frees_any() && shown->pool->mode == AllocationMode::Paged);
    figures_->setText(wordFigures(*shown, map_->lanes()));
}

QString LivePoolPanel::wordFigures(const EngineSnapshot& shown, const std::vector<BlockLane>& lanes) {
    const QString perLane = describeLanes(lanes);
    return perLane.isEmpty() ? describe(shown) : describe(shown) + QLatin1Char('\n') + perLane;
}

QString LivePoolPanel::figures() const {
    const auto shown = replay_.shown();
    if (!stale_ || !shown)
        return figures_->text();
    return wordFigures(*shown, map_->lanes()); // what it will say once shown
}

} // namespace kvscope::ui
