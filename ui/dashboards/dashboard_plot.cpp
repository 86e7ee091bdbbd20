#include "ui/dashboards/dashboard_plot.h"

#include <QTimer>

namespace kvscope::ui {
namespace {

const char* const kReplotPending = "kvscopeReplotPending";

// The plot's cooldown timer, made on first use: while it runs, replots wait
// for its end.
QTimer* replotCooldown(QCustomPlot* plot) {
    static const QString name = QStringLiteral("replotCooldown");
    if (auto* timer = plot->findChild<QTimer*>(name, Qt::FindDirectChildrenOnly))
        return timer;
    auto* timer = new QTimer(plot);
    timer->setObjectName(name);
    timer->setSingleShot(true);
    timer->setInterval(kMinReplotIntervalMs);
    QObject::connect(timer, &QTimer::timeout, plot, [plot, timer] {
        if (!plot->property(kReplotPending).toBool())
            return;
        plot->setProperty(kReplotPending, false);
        plot->replot(QCustomPlot::rpQueuedReplot);
        timer->start();
    });
    return timer;
}

} // namespace

QCustomPlot* newDashboardPlot(QWidget* parent, const QString& xLabel, const QString& yLabel, bool legend) {
    auto* plot = new QCustomPlot(parent);
    plot->setMinimumHeight(140);
    plot->xAxis->setLabel(xLabel);
    plot->yAxis->setLabel(yLabel);
    if (legend) {
        plot->legend->setVisible(true);
        plot->legend->setFont(QFont(plot->font().family(), 8));
        // Right of the axis rect, at the top: an empty element below takes
        // the rest of the height, so the entries stay together.
        auto* side = new QCPLayoutGrid;
        plot->axisRect()->insetLayout()->take(plot->legend);
        plot->plotLayout()->addElement(0, 1, side);
        plot->plotLayout()->setColumnStretchFactor(1, 0.001);
        side->addElement(0, 0, plot->legend);
        side->addElement(1, 0, new QCPLayoutElement(plot));
        side->setRowStretchFactor(0, 0.001);
        plot->legend->setMargins(QMargins(6, 4, 6, 4));
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

void queueReplot(QCustomPlot* plot) {
    QTimer* cooldown = replotCooldown(plot);
    if (cooldown->isActive()) {
        plot->setProperty(kReplotPending, true);
        return;
    }
    plot->replot(QCustomPlot::rpQueuedReplot);
    cooldown->start();
}

} // namespace kvscope::ui
