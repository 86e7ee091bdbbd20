#include "ui/playground/playground_chart.h"

#include <algorithm>

#include <QVBoxLayout>
#include <qcustomplot.h>

#include "ui/dashboards/dashboard_plot.h"
#include "ui/look/text_status.h"

namespace kvscope::ui {
namespace {

// Paged teal, contiguous deep orange: darker on a light background,
// lighter on a dark one.
QColor pagedColour(bool dark) { return dark ? QColor(0x4d, 0xb6, 0xac) : QColor(0x00, 0x79, 0x6b); }
QColor contiguousColour(bool dark) { return dark ? QColor(0xff, 0x8a, 0x65) : QColor(0xbf, 0x36, 0x0c); }

double unusable(const FragmentationStats& s) {
    return 100.0 * (s.internal_waste() + s.reserved_waste() + s.external_fragmentation());
}

void addGraph(QCustomPlot* plot, const QString& name, Qt::PenStyle style) {
    QCPGraph* graph = plot->addGraph();
    graph->setName(name);
    graph->setPen(QPen(Qt::black, 2, style)); // coloured by colourSeries
    graph->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssCircle, 4));
}

} // namespace

PlaygroundChart::PlaygroundChart(QWidget* parent) : QWidget(parent), plot_(new QCustomPlot(this)) {
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(plot_);
    setMinimumHeight(150);

    addGraph(plot_, tr("Paged: blocks in use"), Qt::SolidLine);
    addGraph(plot_, tr("Contiguous: blocks in use"), Qt::SolidLine);
    addGraph(plot_, tr("Paged: unusable"), Qt::DashLine);
    addGraph(plot_, tr("Contiguous: unusable"), Qt::DashLine);
    colourSeries();
    plot_->xAxis->setLabel(tr("operation"));
    plot_->yAxis->setLabel(tr("% of pool"));
    plot_->yAxis->setRange(0, 105);
    // Operations are whole numbers: ticks at 1, or whole multiples when many.
    auto ticker = QSharedPointer<QCPAxisTickerFixed>::create();
    ticker->setTickStep(1.0);
    ticker->setScaleStrategy(QCPAxisTickerFixed::ssMultiples);
    plot_->xAxis->setTicker(ticker);
    // The legend sits right of the plot, where it cannot cover a line.
    plot_->legend->setVisible(true);
    plot_->legend->setFont(QFont(font().family(), 8));
    plot_->axisRect()->insetLayout()->take(plot_->legend);
    plot_->plotLayout()->addElement(0, 1, plot_->legend);
    plot_->plotLayout()->setColumnStretchFactor(1, 0.001);
    plot_->legend->setMargins(QMargins(6, 4, 6, 4));
    plot_->setToolTip(tr("Unusable = internal waste + reserved waste + external fragmentation"));
    followPalette(plot_);
}

void PlaygroundChart::setHistory(const std::vector<PlaygroundStep>& history) {
    QVector<double> x, pagedInUse, contiguousInUse, pagedUnusable, contiguousUnusable;
    for (std::size_t i = 0; i < history.size(); ++i) {
        const PlaygroundStep& step = history[i];
        x << static_cast<double>(i);
        pagedInUse << 100.0 * step.paged.block_occupancy();
        contiguousInUse << 100.0 * step.contiguous.block_occupancy();
        pagedUnusable << unusable(step.paged);
        contiguousUnusable << unusable(step.contiguous);
    }
    plot_->graph(0)->setData(x, pagedInUse, true);
    plot_->graph(1)->setData(x, contiguousInUse, true);
    plot_->graph(2)->setData(x, pagedUnusable, true);
    plot_->graph(3)->setData(x, contiguousUnusable, true);
    const double last = std::max(4.0, static_cast<double>(history.size()) - 1.0);
    plot_->xAxis->setRange(-0.3, last + 0.3);
    plot_->replot();
}

void PlaygroundChart::colourSeries() {
    const bool dark = isDarkPalette(palette());
    for (int i = 0; i < plot_->graphCount(); ++i) {
        QPen pen = plot_->graph(i)->pen();
        pen.setColor(i % 2 == 0 ? pagedColour(dark) : contiguousColour(dark)); // paged, contiguous, paged, contiguous
        plot_->graph(i)->setPen(pen);
    }
}

void PlaygroundChart::changeEvent(QEvent* event) {
    QWidget::changeEvent(event);
    if (event->type() == QEvent::PaletteChange) {
        colourSeries();
        plot_->replot();
    }
}

QColor PlaygroundChart::seriesColour(int series) const { return plot_->graph(series)->pen().color(); }

std::vector<int> PlaygroundChart::pointCounts() const {
    std::vector<int> counts;
    for (int i = 0; i < plot_->graphCount(); ++i)
        counts.push_back(plot_->graph(i)->dataCount());
    return counts;
}

} // namespace kvscope::ui
