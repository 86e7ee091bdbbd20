#include "ui/dashboards/dashboard_plot.h"

namespace kvscope::ui {
namespace {

// Legend entries per row: three fit beside each other in a third of a
// 1024 px window.
constexpr int kLegendColumns = 3;

} // namespace

QCustomPlot* newDashboardPlot(QWidget* parent, const QString& xLabel, const QString& yLabel, bool legend) {
    auto* plot = new QCustomPlot(parent);
    plot->setMinimumHeight(140);
    plot->xAxis->setLabel(xLabel);
    plot->yAxis->setLabel(yLabel);
    if (legend) {
        // A row above the axis rect, where it cannot cover a line and costs
        // no width: the dashboards' docks are wide and short.
        plot->legend->setVisible(true);
        plot->legend->setFont(QFont(plot->font().family(), 8));
        plot->legend->setBorderPen(Qt::NoPen);
        plot->legend->setBrush(Qt::NoBrush);
        plot->legend->setFillOrder(QCPLayoutGrid::foColumnsFirst);
        plot->legend->setWrap(kLegendColumns);
        plot->legend->setMargins(QMargins(4, 0, 4, 0));
        // Entries packed at the left: an empty element takes the rest of the row.
        auto* row = new QCPLayoutGrid;
        plot->axisRect()->insetLayout()->take(plot->legend);
        row->addElement(0, 0, plot->legend);
        row->addElement(0, 1, new QCPLayoutElement(plot));
        row->setColumnStretchFactor(0, 0.001);
        plot->plotLayout()->insertRow(0);
        plot->plotLayout()->addElement(0, 0, row);
        plot->plotLayout()->setRowStretchFactor(0, 0.001);
        plot->plotLayout()->setRowSpacing(0);
    }
    return plot;
}

QCPGraph* addLine(QCustomPlot* plot, const QString& name, const QColor& color, Qt::PenStyle style) {
    QCPGraph* graph = plot->addGraph();
    graph->setName(name);
    graph->setPen(QPen(color, 2, style));
    return graph;
}

std::vector<double> graphValues(const QCPGraph* graph) {
    std::vector<double> values;
    values.reserve(static_cast<std::size_t>(graph->data()->size()));
    for (const QCPGraphData& d : *graph->data())
        values.push_back(d.value);
    return values;
}

} // namespace kvscope::ui
