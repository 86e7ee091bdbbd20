#pragma once

#include <array>
#include <memory>
#include <vector>

#include <QWidget>

#include "engine/engine_snapshot.h"
#include "ui/dashboards/snapshot_history.h"
#include "ui/dashboards/token_rate_spans.h"

class QComboBox;
class QCustomPlot;
class QCPGraph;
class QLabel;

namespace kvscope::ui {

// How fast the engine serves, live: prompt and generation tokens/s,
// running / waiting / swapped sequences and KV utilisation (blocks in use,
// slots holding a token) over a rolling window of seconds, and for a
// mixture of experts the share of each step its experts took; time to first
// token and inter-token latency p50/p95, the last step's time (for a
// mixture of experts, with the share of it spent in the experts),
// preemptions, the prefix cache hit rate and the requests that ended
// (completed, aborted, failed: the engine's own counts) as numbers. Tokens/s is drawn from the tokens each interval
// between snapshots made and the engine's busy time in it
// (token_rate_spans.h): idle time reads 0, never a line between bursts.
// A connected server that stopped answering leaves its last figures,
// greyed under a note of their age (setStale).
class ThroughputPanel : public QWidget {
    Q_OBJECT
public:
    enum class Series {
        PromptTokensPerS,
        GenerationTokensPerS,
        Running,
        Waiting,
        Swapped,
        BlockOccupancy, // %
        TokenOccupancy, // %
        ExpertShare,    // % of each step in a mixture of experts' router and experts
    };

    explicit ThroughputPanel(std::shared_ptr<SnapshotHistory> history = nullptr, QWidget* parent = nullptr);

    const std::shared_ptr<SnapshotHistory>& history() const { return history_; }
    double windowSeconds() const { return window_s_; }
    // What the plots and numbers show (for tests): a series' values in time
    // order; a rate's are one per TokenRateSpan and the last one again.
    std::vector<double> series(Series s) const;
    // The experts' plot is shown once the history holds a step that spent
    // time in experts: never for a dense model.
    bool expertPlotShown() const;
    QString figuresText() const;

    // Forgets what it shows: plots empty, figures back to "No snapshot yet".
    // For the window changing engine (local <-> server), after it cleared
    // the shared history: nothing of the old engine stays on screen.
    void clear();
    // While the engine's figures are a server's last ones (it stopped
    // answering): `note` says so and how old ("Last figures, as of 12 s
    // ago: ..."), above the figures, which are greyed; empty: live again.
    void setStale(const QString& note);
    bool figuresGreyed() const;

public slots:
    void setSnapshot(std::shared_ptr<const kvscope::EngineSnapshot> snapshot);
    // Seconds of history the plots show; 0 shows all the history holds.
    void setWindowSeconds(double seconds);

protected:
    void showEvent(QShowEvent* event) override;

private:
    std::array<QCustomPlot*, 4> allPlots() const;
    QCPGraph* graph(Series s) const;
    void updatePlots();
    void updateRatePlot(const std::vector<TokenRateSpan>& spans);
    void updateFigures(const EngineSnapshot& snapshot);

    std::shared_ptr<SnapshotHistory> history_;
    double window_s_ = 60;
    QComboBox* window_;
    QCustomPlot* tokensPlot_;
    QCustomPlot* seqsPlot_;
    QCustomPlot* kvPlot_;
    QCustomPlot* expertPlot_;
    QLabel* figures_;
    QLabel* awayNote_; // setStale's note
    // Hidden (a tabbed dock in the background): record, draw when shown.
    std::shared_ptr<const EngineSnapshot> latest_;
    bool stale_ = false;
};

} // namespace kvscope::ui
