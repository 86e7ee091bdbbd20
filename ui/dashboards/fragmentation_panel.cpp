#include "ui/dashboards/fragmentation_panel.h"

#include <algorithm>
#include <cmath>

#include <QCheckBox>
#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLocale>
#include <QMouseEvent>
#include <QShowEvent>
#include <QToolTip>
#include <QVBoxLayout>

#include "engine/kv/contiguous_reservation.h"
#include "ui/dashboards/dashboard_plot.h"
#include "ui/look/text_status.h"

namespace kvscope::ui {
namespace {

// More columns than a plot is wide in pixels would only cost time.
constexpr int kMaxHeatColumns = 600;

// The waste lines: blue, orange and red, darker on a light background
// and lighter on a dark one (3:1 or more on either); a contiguous series
// is its paged twin's colour, dashed.
QColor wasteColour(FragmentationPanel::WasteSeries series, bool dark) {
    using W = FragmentationPanel::WasteSeries;
    switch (series) {
    case W::Internal:
    case W::ContiguousInternal: return dark ? QColor(0x5f, 0xa8, 0xe0) : QColor(0x1f, 0x77, 0xb4);
    case W::Reserved:
    case W::ContiguousReserved: return dark ? QColor(0xff, 0x9f, 0x40) : QColor(0xd9, 0x5f, 0x02);
    case W::External: break;
    }
    return dark ? QColor(0xff, 0x6b, 0x6b) : QColor(0xc6, 0x28, 0x28);
}

// Free blocks are a shade off the plot's background and fuller blocks
// stand further out from it: dark to light blue on a light background,
// the reverse on a dark one, so the heatmap is no white field in the dark.
QCPColorGradient fillGradient(bool dark) {
    QCPColorGradient g;
    g.clearColorStops();
    if (dark) {
        g.setColorStopAt(0.0, QColor(0x33, 0x36, 0x3b));  // free
        g.setColorStopAt(0.02, QColor(0x1e, 0x4d, 0x45)); // barely filled
        g.setColorStopAt(0.5, QColor(0x2a, 0x8f, 0xa8));
        g.setColorStopAt(1.0, QColor(0xb4, 0xe8, 0xf2));  // full
    } else {
        g.setColorStopAt(0.0, QColor(0xee, 0xee, 0xee));  // free
        g.setColorStopAt(0.02, QColor(0xc7, 0xe9, 0xb4)); // barely filled
        g.setColorStopAt(0.5, QColor(0x41, 0xb6, 0xc4));
        g.setColorStopAt(1.0, QColor(0x0c, 0x2c, 0x84));  // full
    }
    g.setLevelCount(64);
    return g;
}

QString modeName(AllocationMode mode) {
    const std::string_view name = to_string(mode);
    return QString::fromUtf8(name.data(), static_cast<qsizetype>(name.size()));
}

QString pct(double share) { return QString::number(100.0 * share, 'f', 1) + QLatin1Char('%'); }

} // namespace

FragmentationPanel::FragmentationPanel(std::shared_ptr<SnapshotHistory> history, QWidget* parent)
    : QWidget(parent),
      history_(history ? std::move(history) : std::make_shared<SnapshotHistory>()),
      heatPlot_(newDashboardPlot(this, tr("engine step"), tr("block"), false)),
      wastePlot_(newDashboardPlot(this, tr("engine step"), tr("% of KV memory"))),
      kindPicker_(new QComboBox(this)),
      counterfactual_(new QCheckBox(tr("Show contiguous allocation"), this)),
      summary_(new QLabel(this)) {
    kindPicker_->setObjectName(QStringLiteral("heatmapKind"));
    kindPicker_->setToolTip(tr("The heatmap of every block, or of the blocks one kind of attention layer holds"));
    kindPicker_->setVisible(false);
    connect(kindPicker_, &QComboBox::activated, this, &FragmentationPanel::setHeatmapKind);
    buildHeatmap();
    buildWastePlot();
    colourForPalette();
    counterfactual_->setToolTip(
        tr("What a pre-vLLM allocator would waste: each sequence reserves prompt + max_new_tokens "
           "slots up front. External fragmentation depends on placement history and is not shown."));
    connect(counterfactual_, &QCheckBox::toggled, this, &FragmentationPanel::setCounterfactualVisible);
    summary_->setWordWrap(true);
    summary_->setTextInteractionFlags(Qt::TextSelectableByMouse);

    auto* plots = new QHBoxLayout;
    plots->addWidget(heatPlot_, 1);
    plots->addWidget(wastePlot_, 1);
    // One row under the plots, so a short dock leaves them the height.
    auto* bottom = new QHBoxLayout;
    bottom->addWidget(kindPicker_, 0, Qt::AlignTop);
    bottom->addWidget(counterfactual_, 0, Qt::AlignTop);
    bottom->addWidget(summary_, 1);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 4, 4, 4);
    layout->addLayout(plots, 1);
    layout->addLayout(bottom);
    setCounterfactualVisible(false);
}

void FragmentationPanel::buildHeatmap() {
    heatmap_ = new QCPColorMap(heatPlot_->xAxis, heatPlot_->yAxis);
    heatmap_->setInterpolate(false);
    auto* scale = new QCPColorScale(heatPlot_);
    heatPlot_->plotLayout()->addElement(0, 1, scale);
    scale->setType(QCPAxis::atRight);
    scale->axis()->setLabel(tr("fill (0 free, 1 full)"));
    // The map takes its gradient and range from the scale it is attached to.
    heatmap_->setColorScale(scale);
    scale->setDataRange(QCPRange(0, 1));
    auto* margins = new QCPMarginGroup(heatPlot_);
    heatPlot_->axisRect()->setMarginGroup(QCP::msBottom | QCP::msTop, margins);
    scale->setMarginGroup(QCP::msBottom | QCP::msTop, margins);
    heatPlot_->yAxis->setRangeReversed(true); // block 0 at the top, as the block map draws it
    connect(heatPlot_, &QCustomPlot::mouseMove, this, &FragmentationPanel::showCellToolTip);
}

void FragmentationPanel::showCellToolTip(QMouseEvent* event) {
    const QPointF at = event->position();
    int x = 0, y = 0;
    heatmap_->data()->coordToCell(heatPlot_->xAxis->pixelToCoord(at.x()), heatPlot_->yAxis->pixelToCoord(at.y()), &x,
                                  &y);
    const QSize size = heatmapSize();
    if (shown().columns().empty() || x < 0 || y < 0 || x >= size.width() || y >= size.height() ||
        !heatPlot_->axisRect()->rect().contains(at.toPoint())) {
        QToolTip::hideText();
        return;
    }
    const std::size_t first = static_cast<std::size_t>(y) * shown().blocks_per_row();
    const std::size_t last = std::min(first + shown().blocks_per_row(), shown().blocks()) - 1;
    const QLocale locale;
    const QString blocks = first == last ? tr("block %1").arg(locale.toString(static_cast<qulonglong>(first)))
                                         : tr("blocks %1–%2")
                                               .arg(locale.toString(static_cast<qulonglong>(first)),
                                                    locale.toString(static_cast<qulonglong>(last)));
    double step = 0;
    heatmap_->data()->cellToCoord(x, y, &step, nullptr);
    QToolTip::showText(event->globalPosition().toPoint(),
                       tr("step %1, %2: %3% filled").arg(std::llround(step)).arg(blocks).arg(
                           100.0 * heatmap_->data()->cell(x, y), 0, 'f', 1),
                       heatPlot_);
}

void FragmentationPanel::buildWastePlot() {
    // In WasteSeries' order; coloured by colourForPalette.
    addLine(wastePlot_, tr("internal"), Qt::black);
    addLine(wastePlot_, tr("reserved"), Qt::black);
    addLine(wastePlot_, tr("external"), Qt::black);
    addLine(wastePlot_, tr("contiguous: internal"), Qt::black, Qt::DashLine);
    addLine(wastePlot_, tr("contiguous: reserved"), Qt::black, Qt::DashLine);
    for (int i = 0; i < wastePlot_->graphCount(); ++i)
        wastePlot_->graph(i)->setLineStyle(QCPGraph::lsStepLeft); // a step's waste holds until the next
    wastePlot_->yAxis->setRange(0, 100);
}

QCPGraph* FragmentationPanel::graph(WasteSeries series) const {
    return wastePlot_->graph(static_cast<int>(series));
}

// One view per kind of layer, rebuilt (empty) when the pool's kinds change:
// another model.
void FragmentationPanel::followKinds(const PoolSnapshot& pool) {
    QStringList names{tr("every group")};
    const std::vector<KvKind> kinds = pool.layout.num_groups() > 1 ? pool.layout.groups().kinds() : std::vector<KvKind>();
    for (const KvKind& kind : kinds)
        names << QString::fromStdString(kind.title());
    if (names == viewNames_)
        return;
    viewNames_ = names;
    views_.assign(1, BlockFillColumns());
    for (const KvKind& kind : kinds)
        views_.emplace_back(BlockFillColumns::kMaxRows, BlockFillColumns::kCapacity, kind.groups);
    view_ = 0;
    kindPicker_->clear();
    kindPicker_->addItems(names);
    kindPicker_->setVisible(!kinds.empty());
}

QStringList FragmentationPanel::heatmapKinds() const { return viewNames_.isEmpty() ? QStringList{tr("every group")} : viewNames_; }

void FragmentationPanel::setHeatmapKind(int index) {
    if (index < 0 || index >= static_cast<int>(views_.size()))
        return;
    view_ = index;
    kindPicker_->setCurrentIndex(index);
    updateHeatmap();
}

bool FragmentationPanel::counterfactualVisible() const { return counterfactual_->isChecked(); }

void FragmentationPanel::setCounterfactualVisible(bool visible) {
    if (counterfactual_->isChecked() != visible) {
        counterfactual_->setChecked(visible); // toggled brings us back here
        return;
    }
    for (WasteSeries s : {WasteSeries::ContiguousInternal, WasteSeries::ContiguousReserved}) {
        graph(s)->setVisible(visible);
        if (visible)
            graph(s)->addToLegend();
        else
            graph(s)->removeFromLegend();
    }
    updateWastePlot();
}

void FragmentationPanel::setSnapshot(std::shared_ptr<const EngineSnapshot> snapshot) {
    if (!snapshot || !snapshot->pool)
        return;
    history_->record(*snapshot);
    followKinds(*snapshot->pool);
    for (BlockFillColumns& view : views_)
        view.record(snapshot->step, *snapshot->pool);
    latest_ = std::move(snapshot);
    if (isVisible())
        repaintFromData();
    else
        stale_ = true;
}

// The heatmap's colour scale and the waste lines in their light or dark version.
void FragmentationPanel::colourForPalette() {
    const bool dark = isDarkPalette(palette());
    heatmap_->colorScale()->setGradient(fillGradient(dark));
    for (WasteSeries s : {WasteSeries::Internal, WasteSeries::Reserved, WasteSeries::External,
                          WasteSeries::ContiguousInternal, WasteSeries::ContiguousReserved}) {
        QPen pen = graph(s)->pen();
        pen.setColor(wasteColour(s, dark));
        graph(s)->setPen(pen);
    }
}

void FragmentationPanel::changeEvent(QEvent* event) {
    QWidget::changeEvent(event);
    if (event->type() == QEvent::PaletteChange) {
        colourForPalette();
        queueReplot(heatPlot_);
        queueReplot(wastePlot_);
    }
}

void FragmentationPanel::showEvent(QShowEvent* event) {
    QWidget::showEvent(event);
    if (stale_)
        repaintFromData();
}

void FragmentationPanel::repaintFromData() {
    stale_ = false;
    updateHeatmap();
    updateWastePlot();
    if (latest_)
        updateSummary(*latest_);
}

void FragmentationPanel::updateHeatmap() {
    const auto& columns = shown().columns();
    if (columns.empty())
        return;
    // Columns are evenly spaced steps from the first recorded to the last;
    // each shows the latest snapshot at or before its step. At least two, so
    // the map has a width even after one snapshot.
    const std::uint64_t first = columns.front().step;
    const std::uint64_t span = std::max<std::uint64_t>(columns.back().step - first, 1);
    const int keys = static_cast<int>(std::min<std::uint64_t>(span + 1, kMaxHeatColumns));
    const int rows = static_cast<int>(shown().rows());
    QCPColorMapData* cells = heatmap_->data();
    if (cells->keySize() != keys || cells->valueSize() != rows)
        cells->setSize(keys, rows);
    const double rowBlocks = static_cast<double>(shown().blocks_per_row());
    cells->setRange(QCPRange(static_cast<double>(first), static_cast<double>(first + span)),
                   QCPRange(rowBlocks / 2, rowBlocks * (rows - 0.5)));
    for (int x = 0; x < keys; ++x) {
        const std::uint64_t step = first + span * static_cast<std::uint64_t>(x) / static_cast<std::uint64_t>(keys - 1);
        const BlockFillColumns::Column& column = shown().at_step(step);
        for (int y = 0; y < rows; ++y)
            cells->setCell(x, y, shown().fill(column, static_cast<std::size_t>(y)));
    }
    heatPlot_->xAxis->setRange(static_cast<double>(first), static_cast<double>(first + span));
    heatPlot_->yAxis->setRange(0, static_cast<double>(shown().extent()));
    heatPlot_->yAxis->setLabel(heatmapAxisLabel());
    queueReplot(heatPlot_);
}

void FragmentationPanel::updateWastePlot() {
    const auto& entries = history_->entries();
    QVector<double> steps, internal, reserved, external, contInternal, contReserved;
    // The same steps as the heatmap beside it.
    const std::uint64_t first = shown().columns().empty() ? 0 : shown().columns().front().step;
    for (const SnapshotFigures& f : entries) {
        if (f.step < first)
            continue;
        steps << static_cast<double>(f.step);
        internal << 100.0 * f.internal_waste;
        reserved << 100.0 * f.reserved_waste;
        external << 100.0 * f.external_fragmentation;
        contInternal << 100.0 * f.contiguous_internal_waste;
        contReserved << 100.0 * f.contiguous_reserved_waste;
    }
    graph(WasteSeries::Internal)->setData(steps, internal, true);
    graph(WasteSeries::Reserved)->setData(steps, reserved, true);
    graph(WasteSeries::External)->setData(steps, external, true);
    graph(WasteSeries::ContiguousInternal)->setData(steps, contInternal, true);
    graph(WasteSeries::ContiguousReserved)->setData(steps, contReserved, true);
    if (!steps.isEmpty())
        wastePlot_->xAxis->setRange(steps.front(), std::max(steps.back(), steps.front() + 1));
    wastePlot_->yAxis->setRange(0, wasteAxisTop(internal, reserved, external, contInternal, contReserved));
    // The value now in the legend, which has the room: on the axis label it
    // was cut off at the dock's usual height.
    graph(WasteSeries::Internal)->setName(internal.isEmpty() ? tr("internal")
                                                             : tr("internal (now %1%)")
                                                                   .arg(internal.back(), 0, 'f', internal.back() < 10 ? 2 : 1));
    queueReplot(wastePlot_);
}

// The waste axis fits what is plotted, so that one chat's few tokens of
// internal waste in a 2,048-block pool (0.1%) are not a flat line at the
// bottom of a 0-100% axis: the largest value shown, plus a fifth for room,
// at least 1%. The counterfactual, when shown, can exceed 100% (the
// reservations would not fit) and the axis grows with it.
double FragmentationPanel::wasteAxisTop(const QVector<double>& internal, const QVector<double>& reserved,
                                        const QVector<double>& external, const QVector<double>& contInternal,
                                        const QVector<double>& contReserved) const {
    double top = 0;
    for (const QVector<double>* series : {&internal, &reserved, &external})
        for (double v : *series)
            top = std::max(top, v);
    if (counterfactualVisible())
        for (int i = 0; i < contInternal.size(); ++i)
            top = std::max(top, contInternal[i] + contReserved[i]);
    return std::max(top * 1.2, 1.0);
}

void FragmentationPanel::updateSummary(const EngineSnapshot& snapshot) {
    const FragmentationStats& f = snapshot.pool->fragmentation;
    QString text = tr("Now (%1): internal %2, reserved %3, external %4 of KV memory.")
                       .arg(modeName(snapshot.pool->mode), pct(f.internal_waste()),
                            pct(f.reserved_waste()), pct(f.external_fragmentation()));
    const ContiguousCounterfactual c = contiguous_counterfactual(*snapshot.pool);
    if (c.sequences > 0) {
        text += QLatin1Char(' ') + tr("Contiguous, the same %n sequence(s) would waste %1 internal + %2 reserved "
                                      "in %3 of %4 blocks%5.",
                                      nullptr, static_cast<int>(c.sequences))
                                       .arg(pct(c.internal_waste()), pct(c.reserved_waste()))
                                       .arg(c.reserved_blocks)
                                       .arg(c.pool_blocks)
                                       .arg(c.fits() ? QString() : tr(": they would not fit"));
    }
    summary_->setText(text);
}

// The blocks the rows cover, when not the whole pool ("blocks 0–15 of
// 2,048"), and how many blocks a row averages.
QString FragmentationPanel::heatmapAxisLabel() const {
    const BlockFillColumns& view = shown();
    const QLocale locale;
    const auto number = [&locale](std::size_t n) { return locale.toString(static_cast<qulonglong>(n)); };
    QString label = view.extent() < view.blocks() && view.extent() > 0
                        ? tr("blocks 0–%1 of %2").arg(number(view.extent() - 1), number(view.blocks()))
                        : tr("block");
    if (view.blocks_per_row() > 1)
        label += QLatin1Char(' ') + tr("(rows of %1)").arg(number(view.blocks_per_row()));
    return label;
}

double FragmentationPanel::wasteAxisTop() const { return wastePlot_->yAxis->range().upper; }

QSize FragmentationPanel::heatmapSize() const {
    return {heatmap_->data()->keySize(), heatmap_->data()->valueSize()};
}

double FragmentationPanel::heatmapCell(int column, int row) const { return heatmap_->data()->cell(column, row); }

QColor FragmentationPanel::heatmapColour(double fill) const {
    return QColor::fromRgba(heatmap_->gradient().color(fill, heatmap_->dataRange()));
}

std::vector<double> FragmentationPanel::wasteSeries(WasteSeries series) const { return graphValues(graph(series)); }

QString FragmentationPanel::wasteSeriesName(WasteSeries series) const { return graph(series)->name(); }

QColor FragmentationPanel::wasteSeriesColour(WasteSeries series) const { return graph(series)->pen().color(); }

QString FragmentationPanel::summaryText() const { return summary_->text(); }

} // namespace kvscope::ui
