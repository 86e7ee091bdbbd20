#pragma once

#include <optional>
#include <vector>

#include <QElapsedTimer>
#include <QWidget>

#include "ui/server/server_history.h"
#include "ui/server/server_view_model.h"

class QLabel;
class QTimer;
class QVBoxLayout;

namespace kvscope::ui {

class PrefixCacheWidget;
class ServerHistoryPlot;
class SlotMapWidget;

// The connected view: which server the window watches and how fresh its
// data is, the server's figures and (llama.cpp, vLLM) their history over
// time, for llama.cpp the slot map, for vLLM each
// rank's figures and prefix cache, then what this kind of server cannot
// tell and the recent faults. A thin view over ServerView
// (server_view_model.h): it lays out the texts and rows it is given.
class ServerPanel : public QWidget {
    Q_OBJECT
public:
    explicit ServerPanel(QWidget* parent = nullptr);

    // A sample as it arrives: its view, and its figures into the history
    // (llama.cpp and vLLM; a kvscope server's history is its snapshots').
    // While the server does not answer, the data's age goes on counting
    // (every second) between samples, which then come only every backoff.
    void showSample(const attach::RemoteSample& sample);
    void setView(ServerView view);
    const ServerView& view() const { return view_; }

    SlotMapWidget* slotMap() const { return slotMap_; }
    const ServerHistory& history() const { return history_; }
    ServerHistoryPlot* historyPlot() const { return historyPlot_; }
    // One per vLLM rank with KV events, in rank order.
    std::vector<PrefixCacheWidget*> prefixCaches() const;
    // The text of a part of the panel: "title", "model", "freshness",
    // "figures", "stale", "slots", "ranks", "cannotTell", "faults", "localOff".
    QString text(const QString& part) const;
    // The server's figures are its last ones, greyed (it does not answer).
    bool figuresGreyed() const;
    // The stale figures' age is counting on (shown, and the server away).
    bool isCountingAge() const;

signals:
    // ServerView::stale as it changes ("Last figures, as of 12 s ago: ..."),
    // empty once the server answers: for the dashboards showing its figures.
    void staleChanged(const QString& stale);

protected:
    void changeEvent(QEvent* event) override;
    void showEvent(QShowEvent* event) override;
    void hideEvent(QHideEvent* event) override;

private:
    QLabel* addLabel(const char* name);
    void showRanks();
    void tickAge();
    void followAge();

    ServerView view_;
    // The newest sample and when it came, for its data's age while the server is away.
    std::optional<attach::RemoteSample> sample_;
    QElapsedTimer sinceSample_;
    QTimer* ageTicker_;
    QVBoxLayout* layout_;
    QLabel* title_;
    QLabel* model_;
    QLabel* freshness_;
    QLabel* stale_;
    QLabel* figures_;
    ServerHistory history_;
    ServerHistoryPlot* historyPlot_;
    QLabel* slotSummary_;
    SlotMapWidget* slotMap_;
    QWidget* ranks_;
    QLabel* cannotTell_;
    QLabel* faults_;
    QLabel* localOff_;
};

} // namespace kvscope::ui
