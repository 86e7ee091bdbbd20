#include "ui/dashboards/dashboard_plot.h"

#include <QEvent>
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

void styleAxis(QCPAxis* axis, const QPalette& palette) {
    const QColor text = palette.color(QPalette::WindowText);
    const QPen line(palette.color(QPalette::Dark));
    axis->setBasePen(line);
    axis->setTickPen(line);
    axis->setSubTickPen(line);
    axis->setTickLabelColor(text);
    axis->setLabelColor(text);
    QColor grid = palette.color(QPalette::Mid);
    axis->grid()->setPen(QPen(grid, 0, Qt::DotLine));
    grid.setAlpha(90);
    axis->grid()->setSubGridPen(QPen(grid, 0, Qt::DotLine));
    axis->grid()->setZeroLinePen(Qt::NoPen);
}

// The plot's background, axes, labels and legend in its palette's colours;
// the graphs keep their own.
void stylePlot(QCustomPlot* plot) {
    const QPalette& palette = plot->palette();
    plot->setBackground(palette.brush(QPalette::Base));
    for (QCPAxisRect* rect : plot->axisRects())
        for (QCPAxis* axis : rect->axes())
            styleAxis(axis, palette);
    for (QCPLayoutElement* element : plot->plotLayout()->elements(true))
        if (auto* scale = qobject_cast<QCPColorScale*>(element))
            styleAxis(scale->axis(), palette);
    plot->legend->setBrush(palette.brush(QPalette::Base));
    plot->legend->setBorderPen(QPen(palette.color(QPalette::Mid)));
    plot->legend->setTextColor(palette.color(QPalette::Text));
}

// Restyles a plot when it is first shown (by then its panel has added
// everything, a colour scale included) and whenever the palette changes
// (View > Theme).
class PaletteFollower : public QObject {
public:
    explicit PaletteFollower(QCustomPlot* plot) : QObject(plot) { plot->installEventFilter(this); }

    bool eventFilter(QObject* watched, QEvent* event) override {
        const QEvent::Type type = event->type();
        if (type == QEvent::Polish || type == QEvent::PaletteChange) {
            auto* plot = static_cast<QCustomPlot*>(watched);
            stylePlot(plot);
            queueReplot(plot);
        }
        return false;
    }
};

} // namespace

void followPalette(QCustomPlot* plot) { new PaletteFollower(plot); }

QCustomPlot* newDashboardPlot(QWidget* parent, const QString& xLabel, const QString& yLabel, bool legend) {
    auto* plot = new QCustomPlot(parent);
    plot->setMinimumHeight(140);
    followPalette(plot);
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
