#pragma once

#include <vector>

#include <QWidget>

#include "ui/server/server_history.h"
#include "ui/server/server_view_model.h"

class QLabel;
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
    void showSample(const attach::RemoteSample& sample);
    void setView(ServerView view);
    const ServerView& view() const { return view_; }

    SlotMapWidget* slotMap() const { return slotMap_; }
    const ServerHistory& history() const { return history_; }
    ServerHistoryPlot* historyPlot() const { return historyPlot_; }
    // One per vLLM rank with KV events, in rank order.
    std::vector<PrefixCacheWidget*> prefixCaches() const;
    // The text of a part of the panel: "title", "model", "freshness",
    // "figures", "slots", "ranks", "cannotTell", "faults", "localOff".
    QString text(const QString& part) const;

private:
    QLabel* addLabel(const char* name);
    void showRanks();

    ServerView view_;
    QVBoxLayout* layout_;
    QLabel* title_;
    QLabel* model_;
    QLabel* freshness_;
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
