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

// The plot's background, axes, labels, legend and notes in its palette's
// colours; the graphs keep their own.
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
    // Text items are the plots' notes ("No sequence holds KV now"): quieter
    // than the data, readable in either theme.
    for (int i = 0; i < plot->itemCount(); ++i)
        if (auto* note = qobject_cast<QCPItemText*>(plot->item(i)))
            note->setColor(palette.color(QPalette::PlaceholderText));
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

// Legend entries per row: three fit beside each other in a third of a
// 1024 px window.
constexpr int kLegendColumns = 3;

} // namespace

void followPalette(QCustomPlot* plot) { new PaletteFollower(plot); }

QCustomPlot* newDashboardPlot(QWidget* parent, const QString& xLabel, const QString& yLabel, bool legend) {
    auto* plot = new QCustomPlot(parent);
    plot->setMinimumHeight(140);
    followPalette(plot);
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
