#pragma once

#include <optional>

#include <QDialog>

#include "engine/presets/kv_calculator.h"

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QSpinBox;
class QTableWidget;

namespace kvscope::ui {

// `kvscope-cli calc` as a dialog: a model (a calc preset — calculator-only
// ones marked — or the loaded model's geometry), tokens per sequence,
// sequences, block size, a step's chunk and --swa-full, the KV dtype to
// highlight, and optionally a GPU (preset or memory size) with the weights'
// format. A model with windows or a latent cache also shows its bytes by
// kind of layer, and the cost of keeping every layer whole. Every number
// comes from run_kv_calculator, the CLI's own implementation, so both show
// the same bytes.
class KvCalculatorDialog : public QDialog {
    Q_OBJECT
public:
    // kWhole, kSaved: every layer kept whole, and that over the sequence's
    // bytes; shown for a model whose window layers free.
    enum Column { kDtype, kPerToken, kPerSequence, kTotal, kVsF16, kWhole, kSaved, kFit, kColumns };
    // The kinds table: the highlighted dtype's bytes by kind of layer (f16
    // when a latent cache has not the highlighted dtype).
    enum KindColumn { kKind, kKindPerToken, kKindBlocks, kKindPerSequence, kKindColumns };

    explicit KvCalculatorDialog(QWidget* parent = nullptr);

    // The loaded model's geometry, parameters and real weight bytes
    // (calc_model(config, stats, path)); listed first and selected.
    void setLoadedModel(const kvscope::CalcModel& model);
    // Opens on what the engine runs: its KV dtype highlighted, its block size.
    void setEngineSettings(kvscope::KvDtype dtype, std::uint32_t blockSize);
    // Selects a model preset by name; false when there is none.
    bool selectPreset(const QString& name);

    kvscope::CalcInputs inputs() const;
    // The last answer (empty answers when the inputs were rejected) and the
    // table's cells: display text, and the exact figure behind it
    // (bytes, a ratio, or a sequence count; none for an empty cell).
    const kvscope::CalcResult& result() const { return result_; }
    QString cellText(int row, Column column) const;
    std::optional<double> cellValue(int row, Column column) const;
    int kindRows() const; // 0 while the kinds table is hidden (one kind, no latent)
    QString kindText(int row, KindColumn column) const;
    std::optional<double> kindValue(int row, KindColumn column) const;
    QString errorText() const;

private slots:
    void modelChanged();
    void recompute();

private:
    void fillTable();
    void fillKinds();
    void showGpuMemory();
    QString windowsText() const;

    std::optional<CalcModel> loaded_;
    QComboBox* model_;
    QSpinBox* tokens_;
    QSpinBox* sequences_;
    QSpinBox* blockSize_;
    QSpinBox* chunk_;
    QCheckBox* swaFull_;
    QComboBox* dtype_;
    QComboBox* gpu_;
    QDoubleSpinBox* gpuGib_;
    QComboBox* weights_;
    QDoubleSpinBox* gpuUtil_;
    QLabel* summary_;
    QLabel* error_;
    QTableWidget* table_;
    QTableWidget* kinds_;
    CalcResult result_;
};

} // namespace kvscope::ui
