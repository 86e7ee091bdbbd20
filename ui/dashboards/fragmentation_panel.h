#pragma once

#include <memory>
#include <vector>

#include <QColor>
#include <QWidget>

#include "engine/engine_snapshot.h"
#include "ui/dashboards/block_fill_columns.h"
#include "ui/dashboards/snapshot_history.h"

class QCheckBox;
class QComboBox;
class QCustomPlot;
class QCPColorMap;
class QCPGraph;
class QLabel;
class QMouseEvent;

namespace kvscope::ui {

// Where the KV pool's memory goes over time. Left: a heatmap, x = engine
// step, y = block index over the blocks in use recently, not the whole pool
// (BlockFillColumns::extent; the axis says "blocks 0–15 of 2,048"), in rows
// of consecutive blocks when they are many, colour = fill fraction. Right: internal, reserved and external waste as a
// share of KV memory per step, and, behind a toggle, what a contiguous
// allocator reserving prompt + max_new_tokens per sequence would waste
// holding the same sequences (engine/kv/contiguous_reservation.h).
//
// With KV cache groups (a model with sliding-window layers) a selector
// under the plots shows the heatmap of every block or of one kind of
// attention layer ("sliding window 512, 22 layers": the blocks its groups
// hold, the rest drawn as free). Each kind's columns are recorded all
// along, so switching shows its whole history. Hidden for one group.
class FragmentationPanel : public QWidget {
    Q_OBJECT
public:
    enum class WasteSeries { Internal, Reserved, External, ContiguousInternal, ContiguousReserved };

    // Share `history` with the other time-series panels of the same engine;
    // null: the panel keeps its own.
    explicit FragmentationPanel(std::shared_ptr<SnapshotHistory> history = nullptr, QWidget* parent = nullptr);

    const std::shared_ptr<SnapshotHistory>& history() const { return history_; }
    bool counterfactualVisible() const;

    // What the plots hold (for tests): heatmap columns x rows, one cell's
    // fill fraction, the colour of a fill, one waste series in % of KV
    // memory (oldest first). A hidden panel updates them when shown.
    QSize heatmapSize() const;
    double heatmapCell(int column, int row) const;
    QColor heatmapColour(double fill) const;
    std::size_t blocksPerRow() const { return shown().blocks_per_row(); }
    // The blocks the heatmap's rows cover, [0, heatmapExtent()), and the
    // block axis's label, which says so.
    std::size_t heatmapExtent() const { return shown().extent(); }
    QString heatmapAxisLabel() const;
    // The heatmap's choices: "every group", then each kind's title (one
    // entry for a model of one group); which one is shown.
    QStringList heatmapKinds() const;
    int heatmapKind() const { return view_; }
    void setHeatmapKind(int index);
    std::vector<double> wasteSeries(WasteSeries series) const;
    QString wasteSeriesName(WasteSeries series) const; // its legend entry: internal's says its value now
    QColor wasteSeriesColour(WasteSeries series) const; // its line's, in the palette's light or dark version
    double wasteAxisTop() const; // the waste axis's top, in %
    QString summaryText() const;

public slots:
    void setSnapshot(std::shared_ptr<const kvscope::EngineSnapshot> snapshot);
    void setCounterfactualVisible(bool visible);

protected:
    void showEvent(QShowEvent* event) override;
    void changeEvent(QEvent* event) override; // the heatmap's and lines' light or dark colours

private:
    void repaintFromData(); // plots and summary from the recorded data and latest_
    void buildHeatmap();
    void buildWastePlot();
    void colourForPalette();
    void updateHeatmap();
    void updateWastePlot();
    double wasteAxisTop(const QVector<double>& internal, const QVector<double>& reserved,
                        const QVector<double>& external, const QVector<double>& contInternal,
                        const QVector<double>& contReserved) const;
    void updateSummary(const EngineSnapshot& snapshot);
    void showCellToolTip(QMouseEvent* event);
    QCPGraph* graph(WasteSeries series) const;
    const BlockFillColumns& shown() const { return views_[static_cast<std::size_t>(view_)]; }
    void followKinds(const PoolSnapshot& pool);

    std::shared_ptr<SnapshotHistory> history_;
    // The heatmap's data: every block, then one per kind of layer.
    std::vector<BlockFillColumns> views_{BlockFillColumns()};
    QStringList viewNames_;
    int view_ = 0;
    QCustomPlot* heatPlot_;
    QCPColorMap* heatmap_ = nullptr;
    QCustomPlot* wastePlot_;
    QComboBox* kindPicker_;
    QCheckBox* counterfactual_;
    QLabel* summary_;
    // A hidden panel (a tabbed dock in the background) records snapshots but
    // draws only when shown.
    std::shared_ptr<const EngineSnapshot> latest_;
    bool stale_ = false;
};

} // namespace kvscope::ui
