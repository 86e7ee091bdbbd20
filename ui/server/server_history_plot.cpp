#include "ui/server/server_history_plot.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

#include <QVBoxLayout>
#include <qcustomplot.h>

#include "ui/dashboards/dashboard_plot.h"

namespace kvscope::ui {
namespace {

constexpr double kNoValue = std::numeric_limits<double>::quiet_NaN(); // QCustomPlot breaks a line at NaN
constexpr double kMinSpanS = 60; // a young history still reads as a minute of time
constexpr int kRankGraphsFrom = 1; // usage plot: the server's line, then one per rank
// Side margins both plots share, so that their time axes line up (the load
// plot's right one holds the tokens/s axis).
const QMargins kSideMargins(60, 0, 70, 0);

const QColor kRankColours[] = {QColor(0xff, 0x7f, 0x0e), QColor(0x2c, 0xa0, 0x2c), QColor(0xd6, 0x27, 0x28),
                               QColor(0x94, 0x67, 0xbd), QColor(0x8c, 0x56, 0x4b), QColor(0xe3, 0x77, 0xc2)};

using Value = std::function<std::optional<double>(const ServerHistoryPoint&)>;

// One series as a graph's keys and values, in clock seconds; a NaN before
// each point that follows a gap, so no line crosses the time the server
// was away.
void fill(QCPGraph* graph, const ServerHistory& history, double clock_at_zero_s, const Value& value) {
    QVector<double> keys, values;
    for (const ServerHistoryPoint& p : history.points()) {
        const double t = clock_at_zero_s + p.time_s;
        if (p.after_gap) {
            keys << t;
            values << kNoValue;
        }
        keys << t;
        values << value(p).value_or(kNoValue);
    }
    graph->setData(keys, values, true);
}

double top(const QCustomPlot* plot, const QCPAxis* axis) {
    double high = 1;
    for (int i = 0; i < plot->graphCount(); ++i)
        if (plot->graph(i)->valueAxis() == axis)
            for (const QCPGraphData& d : *plot->graph(i)->data())
                if (!std::isnan(d.value))
                    high = std::max(high, d.value);
    return high * 1.1;
}

} // namespace

ServerHistoryPlot::ServerHistoryPlot(QWidget* parent)
    : QWidget(parent),
      usagePlot_(newDashboardPlot(this, QString(), tr("% of KV cache"))),
      loadPlot_(newDashboardPlot(this, QString(), tr("requests"))) {
    setObjectName(QStringLiteral("serverHistoryPlot"));
    addLine(usagePlot_, tr("KV usage"), QColor(0x1f, 0x77, 0xb4));
    usagePlot_->yAxis->setRange(0, 105);
    addLine(loadPlot_, tr("running"), QColor(0x2c, 0xa0, 0x2c));
    addLine(loadPlot_, tr("waiting"), QColor(0x94, 0x67, 0xbd));
    QCPGraph* rate = addLine(loadPlot_, tr("generation tokens/s"), QColor(0x8c, 0x56, 0x4b), Qt::DashLine);
    rate->setValueAxis(loadPlot_->yAxis2);
    loadPlot_->yAxis2->setVisible(true);
    loadPlot_->yAxis2->setLabel(tr("tokens/s"));
    QSharedPointer<QCPAxisTickerDateTime> clock(new QCPAxisTickerDateTime);
    clock->setDateTimeSpec(Qt::LocalTime);
    for (QCustomPlot* plot : {usagePlot_, loadPlot_}) {
        plot->xAxis->setTicker(clock);
        plot->setMinimumHeight(150);
        plot->axisRect()->setAutoMargins(QCP::msTop | QCP::msBottom);
        plot->axisRect()->setMargins(kSideMargins);
    }
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(usagePlot_);
    layout->addWidget(loadPlot_);
}

void ServerHistoryPlot::showRankGraphs(const std::vector<int>& ranks) {
    if (usagePlot_->graphCount() == kRankGraphsFrom + static_cast<int>(ranks.size()))
        return;
    while (usagePlot_->graphCount() > kRankGraphsFrom)
        usagePlot_->removeGraph(usagePlot_->graphCount() - 1);
    for (std::size_t i = 0; i < ranks.size(); ++i)
        addLine(usagePlot_, tr("rank %1").arg(ranks[i]), kRankColours[i % std::size(kRankColours)], Qt::DashLine);
}

void ServerHistoryPlot::setHistory(const ServerHistory& history, double clock_at_zero_s) {
    const std::vector<int> ranks = history.ranks();
    showRankGraphs(ranks);
    const auto percent = [](std::optional<double> v) { return v ? std::optional(100.0 * *v) : std::nullopt; };
    fill(usagePlot_->graph(0), history, clock_at_zero_s, [&](const ServerHistoryPoint& p) { return percent(p.kv_usage); });
    for (std::size_t i = 0; i < ranks.size(); ++i)
        fill(usagePlot_->graph(kRankGraphsFrom + static_cast<int>(i)), history, clock_at_zero_s,
             [&, rank = ranks[i]](const ServerHistoryPoint& p) -> std::optional<double> {
                 for (const RankUsage& r : p.ranks)
                     if (r.rank == rank)
                         return 100.0 * r.kv_usage;
                 return std::nullopt;
             });
    fill(loadPlot_->graph(0), history, clock_at_zero_s, [](const ServerHistoryPoint& p) { return p.running; });
    fill(loadPlot_->graph(1), history, clock_at_zero_s, [](const ServerHistoryPoint& p) { return p.waiting; });
    fill(loadPlot_->graph(2), history, clock_at_zero_s,
         [](const ServerHistoryPoint& p) { return p.generation_tokens_per_s; });
    loadPlot_->yAxis->setRange(0, top(loadPlot_, loadPlot_->yAxis));
    loadPlot_->yAxis2->setRange(0, top(loadPlot_, loadPlot_->yAxis2));
    if (history.empty())
        return;
    const double last = clock_at_zero_s + std::max(history.points().back().time_s, history.lastSampleTime());
    const double first = std::min(clock_at_zero_s + history.points().front().time_s, last - kMinSpanS);
    auto* clock = static_cast<QCPAxisTickerDateTime*>(usagePlot_->xAxis->ticker().data());
    clock->setDateTimeFormat(last - first > 3600 ? QStringLiteral("hh:mm") : QStringLiteral("hh:mm:ss"));
    for (QCustomPlot* plot : {usagePlot_, loadPlot_}) {
        plot->xAxis->setRange(first, last);
        queueReplot(plot);
    }
}

std::vector<ServerHistoryPlot::GraphInfo> ServerHistoryPlot::graphs() const {
    std::vector<GraphInfo> infos;
    for (const QCustomPlot* plot : {usagePlot_, loadPlot_})
        for (int i = 0; i < plot->graphCount(); ++i)
            infos.push_back({plot->graph(i)->name(), plot->graph(i)->data()->size()});
    return infos;
}

} // namespace kvscope::ui
