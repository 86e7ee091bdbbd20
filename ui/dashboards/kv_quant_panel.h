#pragma once

#include <memory>
#include <vector>

#include <QElapsedTimer>
#include <QString>
#include <QWidget>

#include "engine/engine_snapshot.h"
#include "ui/dashboards/kv_quant_costs.h"

class QCustomPlot;
class QCPBars;
class QLabel;
class QTableWidget;
class QTableWidgetItem;
class QTimer;

namespace kvscope::ui {

// One measured row of the accuracy table: a KV dtype's perplexity on a text
// against f32 KV (as engine/runtime's KV accuracy measurement reports it).
struct AccuracyRow {
    QString dtype;
    double bytes_per_token = 0;
    double perplexity = 0;
    double delta_pct = 0;       // perplexity change against f32 KV, percent
    double kld = 0;             // mean KL divergence from f32 KV, nats
    double top1_agreement = 0;  // share of positions ranking the same token first
};

// What KV quantization saves for the loaded model at the current context
// lengths: bytes per token and the current sequences' KV bytes per dtype as
// bars, a table with "sequences that fit in this pool", and the measured
// accuracy table when one has been given.
class KvQuantPanel : public QWidget {
    Q_OBJECT
public:
    enum class Bars { BytesPerToken, KvBytes };

    explicit KvQuantPanel(QWidget* parent = nullptr);

    // The latest costs; the table and bars show them at most 250 ms later.
    const KvQuantCosts& costs() const { return costs_; }
    // What the widgets show (for tests).
    std::vector<double> barValues(Bars bars) const;
    QString costCell(int row, int column) const;
    QString accuracyCell(int row, int column) const;
    int accuracyRowCount() const;

public slots:
    void setSnapshot(std::shared_ptr<const kvscope::EngineSnapshot> snapshot);
    // Rows of a finished measurement (empty clears the table); `note` says
    // what was measured (text, tokens, context).
    void setAccuracyRows(const std::vector<kvscope::ui::AccuracyRow>& rows, const QString& note = {});

private:
    static QTableWidgetItem* itemAt(QTableWidget* table, int row, int column);
    void showCosts();
    void fillCostTable();
    void fillBars();

    KvQuantCosts costs_;
    QCustomPlot* tokenPlot_;
    QCustomPlot* totalPlot_;
    QCPBars* tokenBars_;
    QCPBars* totalBars_;
    QLabel* context_;
    QTableWidget* costTable_;
    QLabel* accuracyNote_;
    QTableWidget* accuracyTable_;
    // Lengths change every step while tokens stream; the table and bars
    // follow at most 250 ms apart, the latest costs winning.
    QElapsedTimer sinceShown_;
    QTimer* refresh_;
    bool pending_ = false;
};

} // namespace kvscope::ui
