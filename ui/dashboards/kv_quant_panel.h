#pragma once

#include <memory>
#include <vector>

#include <QElapsedTimer>
#include <QString>
#include <QWidget>

#include "engine/engine_snapshot.h"
#include "ui/dashboards/accuracy_measurement.h"
#include "ui/dashboards/kv_quant_costs.h"

class QCustomPlot;
class QCPBars;
class QCPItemText;
class QLabel;
class QProgressBar;
class QPushButton;
class QSpinBox;
class QTableWidget;
class QTableWidgetItem;
class QTimer;

namespace kvscope::ui {

// What KV quantization saves for the loaded model at the current context
// lengths: bytes per token and the KV the pool holds now per dtype as bars
// (an empty state while no sequence holds KV), a table with "sequences that
// fit in this pool", and the measured accuracy table: Measure accuracy
// scores the built-in sample text (or a text file) with every KV dtype
// against f32 KV on a worker thread (AccuracyMeasurement), with progress.
// Results name the model they were measured on; loading another model
// clears them.
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
    bool isMeasuringAccuracy() const { return measurement_->isRunning(); }
    QString accuracyNoteText() const;
    // The "KV in use now" chart's empty-state text, when it shows (for tests).
    QString kvNowEmptyText() const;

public slots:
    void setSnapshot(std::shared_ptr<const kvscope::EngineSnapshot> snapshot);
    // The loaded model, for the accuracy measurement (null: none loaded),
    // and the name results are labelled with. Another model cancels a
    // running measurement and clears the last results.
    void setModel(std::shared_ptr<const kvscope::Model> model, const QString& name = {});
    // Scores the text file (AccuracyMeasurement::sampleText(): the built-in
    // sample) in windows of `context` tokens (0: the window
    // box's value, whose 0 means the model's context). What the Measure
    // accuracy button does after asking for the file.
    void measureAccuracy(const QString& textFile, std::uint32_t context = 0);
    // Rows of a finished measurement (empty clears the table); `note` says
    // what was measured (text, tokens, context).
    void setAccuracyRows(const std::vector<kvscope::ui::AccuracyRow>& rows, const QString& note = {});

protected:
    void showEvent(QShowEvent* event) override;

private:
    static QTableWidgetItem* itemAt(QTableWidget* table, int row, int column);
    void showCosts();
    void fillCostTable();
    void fillBars();
    QWidget* buildAccuracySection();
    void chooseTextAndMeasure();
    void showAccuracyResult(const std::vector<kvscope::ui::AccuracyRow>& rows, const QString& note);
    void showMeasuring(bool measuring);

    KvQuantCosts costs_;
    QCustomPlot* tokenPlot_;
    QCustomPlot* totalPlot_;
    QCPBars* tokenBars_;
    QCPBars* totalBars_;
    QCPItemText* kvNowEmpty_;
    QLabel* context_;
    QTableWidget* costTable_;
    QLabel* accuracyNote_;
    QTableWidget* accuracyTable_;
    std::shared_ptr<const Model> model_;
    QString modelName_;
    std::shared_ptr<const Model> measuredModel_; // of the running measurement
    AccuracyMeasurement* measurement_;
    QPushButton* measure_;
    QPushButton* measureFile_;
    QPushButton* cancel_;
    QSpinBox* window_;
    QProgressBar* progress_;
    // Lengths change every step while tokens stream; the table and bars
    // follow at most 250 ms apart, the latest costs winning, and only while
    // the panel is shown.
    QElapsedTimer sinceShown_;
    QTimer* refresh_;
    bool pending_ = false;
};

} // namespace kvscope::ui
