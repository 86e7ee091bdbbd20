#pragma once

#include <memory>
#include <optional>

#include <QWidget>

#include "engine/engine_snapshot.h"
#include "engine/workload/workload.h"
#include "ui/chat_palette.h"
#include "ui/chat_turn.h"
#include "ui/dashboards/snapshot_metatype.h"
#include "ui/model_source.h"

class QLabel;
class QPushButton;
class QTableWidget;

namespace kvscope::ui {

class EngineSettingsPanel;
class EngineThread;
class LivePoolPanel;

// Compare A/B: a second engine (B) with its own EngineConfig runs the same
// model; the window sends it the same chat turns and workloads as the main
// engine (A). Both pools' block maps side by side, and a table of each
// engine's own measured figures with the difference. Both engines share
// this machine's cores, and the panel says so.
//
// Object names for tests: compareSettings, startCompare, stopCompare,
// compareTable, compareNote.
class ComparePanel : public QWidget {
    Q_OBJECT
public:
    enum Row { GenerationTps, PromptTps, Running, Waiting, Preemptions, BlocksUsed, TokenOccupancy,
               InternalWaste, ReservedWaste, ExternalFragmentation, TtftP50, TtftP95, kRows };

    explicit ComparePanel(QWidget* parent = nullptr);
    ~ComparePanel() override;

    bool isRunning() const { return engineB_ != nullptr; }
    LivePoolPanel* mapA() const { return mapA_; }
    LivePoolPanel* mapB() const { return mapB_; }
    QString cell(Row row, int column) const;

    // What A runs: B loads the same model.
    void setModelSource(const ModelSource& source);
    // Side A: the main window hands on each of its snapshots, with the
    // palette its block map uses.
    void showSnapshotA(std::shared_ptr<const EngineSnapshot> snapshot, const SequencePalette& palette);

    // Start B with the form's configuration, or stop it.
    void start();
    void stop();

public slots:
    void submitChat(const kvscope::ui::ChatTurn& turn);
    void abortChat(int chat);
    void startWorkload(const kvscope::WorkloadSpec& spec);
    void stopWorkload();

signals:
    void errorOccurred(const QString& message);
    void runningChanged(bool running);
    void snapshotBShown(std::shared_ptr<const kvscope::EngineSnapshot> snapshot);

private:
    void showSnapshotB(std::shared_ptr<const EngineSnapshot> snapshot);
    void fillTable();

    std::optional<ModelSource> source_;
    std::unique_ptr<EngineThread> engineB_;
    RequestChats chatsB_;
    std::shared_ptr<const EngineSnapshot> lastA_, lastB_;
    EngineSettingsPanel* settings_;
    QPushButton* start_;
    QPushButton* stop_;
    QLabel* note_;
    LivePoolPanel* mapA_;
    LivePoolPanel* mapB_;
    QTableWidget* table_;
};

} // namespace kvscope::ui
