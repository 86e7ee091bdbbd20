#pragma once

#include <optional>

#include <QWidget>

#include "ui/playground/playground_model.h"

class QComboBox;
class QLabel;
class QPushButton;
class QSpinBox;

namespace kvscope::ui {

class PlaygroundChart;
class PoolView;

// The allocator playground: controls that apply each operation to a paged
// and a contiguous pool, the two block maps side by side with their
// fragmentation figures, and a chart of both over the operations.
//
// Controls carry object names for tests: poolBlocks, blockSize, reset,
// abcScenario, parallelScenario, promptTokens, maxNewTokens, addSequence, sequence,
// appendCount, append, fork, free.
class PlaygroundPanel : public QWidget {
    Q_OBJECT
public:
    explicit PlaygroundPanel(QWidget* parent = nullptr);

    const PlaygroundModel& model() const { return model_; }
    PoolView* view(PoolSide side) const;
    PlaygroundChart* chart() const { return chart_; }
    void runScenario(Scenario scenario);

signals:
    // After every operation, with its description ("Free A").
    void operationApplied(const QString& description);

private:
    QWidget* buildPoolControls();
    QWidget* buildSequenceControls();
    QWidget* buildPools();
    void reset();
    void addSequence();
    void appendTokens();
    void forkSequence();
    void freeSequence();
    std::optional<SeqId> selectedSequence() const;
    void refresh(std::optional<SeqId> select = std::nullopt);
    void refreshSequences(std::optional<SeqId> select);

    PlaygroundModel model_;
    QSpinBox* poolBlocks_;
    QSpinBox* blockSize_;
    QSpinBox* promptTokens_;
    QSpinBox* maxNewTokens_;
    QSpinBox* appendCount_;
    QComboBox* sequence_;
    QPushButton* append_;
    QPushButton* fork_;
    QPushButton* free_;
    QLabel* lastOperation_;
    PoolView* paged_;
    PoolView* contiguous_;
    PlaygroundChart* chart_;
};

} // namespace kvscope::ui
