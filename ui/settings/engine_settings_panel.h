#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include <QString>
#include <QStringList>
#include <QWidget>

#include "engine/engine_config.h"

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QSpinBox;

namespace kvscope::ui {

// The loaded model's KV shape, which turns a memory budget into blocks.
// layer_windows: each layer's sliding window (ModelConfig::layer_windows,
// 0 = full attention); empty: every layer full attention. A block holds
// one KV cache group's layers (kv_groups.h), so the windows size blocks.
struct ModelShape {
    QString name;
    KvGeometry kv;
    std::uint32_t context = 0;
    std::vector<std::uint32_t> layer_windows = {};
};

// The KV pool a configuration gives a model, as kv_pool_blocks sizes it
// for the engine: its blocks and bytes (blocks, fp8 scales, KIVI tails).
struct PoolPlan {
    std::uint32_t blocks = 0;
    std::uint32_t block_size = 0;
    double mib = 0;           // what the pool takes, everything outside the blocks included
    double suggested_mib = 0; // suggested_kv_budget_mib for this model and form
};
// Throws kvscope::Error when the budget holds no block.
PoolPlan planPool(const EngineConfig& config, const ModelShape& model);

// What Apply rebuilt: the settings that differ, in the form's words
// ("KV cache format f16 → int8"); empty when none does.
QStringList configChanges(const EngineConfig& before, const EngineConfig& after);

// The engine's configuration as a form, labelled in words (each tooltip
// names the EngineConfig key). The pool is sized from a memory budget in
// MiB, whose blocks show before Apply once a model is known. Apply asks for
// a new engine with it; when the engine reports it applied, the form shows
// what was rebuilt. With a settings key, an applied configuration is kept
// in QSettings for the next run (savedConfig reads it back).
//
// Object names for tests: backend, kvDtype, blockSize, kvBudget, numBlocks,
// allocation, preemption, prefixCaching, swaFull, maxNumSeqs, maxBatchedTokens,
// threads, poolPlan, applyConfig, applyResult.
class EngineSettingsPanel : public QWidget {
    Q_OBJECT
public:
    explicit EngineSettingsPanel(QWidget* parent = nullptr);

    // The configuration applied last, shown in the form. After an Apply it
    // also says what changed.
    void setConfig(const EngineConfig& config);
    EngineConfig config() const;
    // The loaded model: the budget's blocks show for it.
    void setModelShape(const ModelShape& model);
    // Applied configurations go to QSettings under `key` (the model path left out).
    void persistAs(const QString& key);
    static EngineConfig savedConfig(const QString& key, const EngineConfig& fallback);
    // A line under Apply, for callers that apply elsewhere (Compare A/B before B runs).
    void setApplyNote(const QString& note);

    QString poolPlanText() const;
    QString applyResultText() const;

signals:
    void applyRequested(const kvscope::EngineConfig& config);

private:
    void buildForm();
    void showPoolPlan();
    void requestApply();

    EngineConfig base_; // fields the form does not show keep their values
    std::optional<ModelShape> model_;
    std::optional<EngineConfig> applying_; // the configuration before the Apply in flight
    QString settingsKey_;
    QComboBox* backend_;
    QComboBox* kvDtype_;
    QSpinBox* blockSize_;
    QDoubleSpinBox* kvBudget_;
    QSpinBox* numBlocks_;
    QComboBox* allocation_;
    QComboBox* preemption_;
    QCheckBox* prefixCaching_;
    QCheckBox* swaFull_;
    QSpinBox* maxNumSeqs_;
    QSpinBox* maxBatchedTokens_;
    QSpinBox* threads_;
    QLabel* poolPlan_;
    QLabel* applyResult_;
};

} // namespace kvscope::ui
