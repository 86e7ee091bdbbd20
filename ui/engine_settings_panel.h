#pragma once

#include <QWidget>

#include "engine/engine_config.h"

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QSpinBox;

namespace kvscope::ui {

// The engine's configuration as a form, in EngineConfig's words. Apply
// asks for a new engine with it; the form then shows what was applied.
//
// Object names for tests: backend, kvDtype, blockSize, numBlocks, allocation,
// preemption, prefixCaching, maxNumSeqs, maxBatchedTokens, threads, applyConfig.
class EngineSettingsPanel : public QWidget {
    Q_OBJECT
public:
    explicit EngineSettingsPanel(QWidget* parent = nullptr);

    void setConfig(const EngineConfig& config);
    EngineConfig config() const;

signals:
    void applyRequested(const kvscope::EngineConfig& config);

private:
    EngineConfig base_; // fields the form does not show keep their values
    QComboBox* backend_;
    QComboBox* kvDtype_;
    QSpinBox* blockSize_;
    QSpinBox* numBlocks_;
    QComboBox* allocation_;
    QComboBox* preemption_;
    QCheckBox* prefixCaching_;
    QSpinBox* maxNumSeqs_;
    QSpinBox* maxBatchedTokens_;
    QSpinBox* threads_;
};

} // namespace kvscope::ui
