#pragma once

#include <vector>

#include <QWidget>

#include "ui/server/server_history.h"

class QCustomPlot;

namespace kvscope::ui {

// Two small plots of a llama.cpp or vLLM server's ServerHistory, against
// the clock: KV usage % (the server's, and one dashed line per vLLM rank),
// and requests running and waiting with generation tokens/s on the right
// axis. The time the server was away is drawn as a break in the lines, and
// the time axis runs on to the newest sample while it is away.
// Replots at most every kMinReplotIntervalMs (dashboard_plot.h).
class ServerHistoryPlot : public QWidget {
    Q_OBJECT
public:
    explicit ServerHistoryPlot(QWidget* parent = nullptr);

    // clock_at_zero_s: the wall-clock time (seconds since the epoch) of the
    // history's time 0, the monitor's start.
    void setHistory(const ServerHistory& history, double clock_at_zero_s);

    // What the plots hold (for tests): each graph's name and its number of
    // points, a break in a line counting as one; usage plot first.
    struct GraphInfo {
        QString name;
        int points = 0;
    };
    std::vector<GraphInfo> graphs() const;

private:
    void showRankGraphs(const std::vector<int>& ranks);

    QCustomPlot* usagePlot_;
    QCustomPlot* loadPlot_;
};

} // namespace kvscope::ui
