#pragma once

#include <memory>
#include <optional>

#include <QStringList>
#include <QWidget>

#include "engine/engine_snapshot.h"
#include "engine/workload/workload.h"
#include "ui/chat/chat_palette.h"
#include "ui/bridge/chat_turn.h"
#include "ui/bridge/snapshot_metatype.h"
#include "ui/bridge/engine_controller.h" // EngineConfig's metatype, for setConfigA
#include "ui/bridge/model_source.h"

class QGroupBox;
class QLabel;
class QPlainTextEdit;
class QPushButton;
class QTabWidget;
class QTableWidget;

namespace kvscope::ui {

class EngineSettingsPanel;
class LivePoolPanel;
struct ModelShape;

// One figure of the comparison from one engine's snapshot; none when the
// engine has no data for it yet (no token generated, no first token timed).
std::optional<double> compareFigure(int row, const EngineSnapshot& snapshot);

// Compare A/B: a second engine (B) with its own EngineConfig runs the same
// model; the window sends it the same chat turns and workloads as the main
// engine (A). What each runs (KV format, block size, pool, allocation...)
// heads a table of each engine's own measured figures with the difference
// ("—" where an engine has no data); both pools' block maps and both
// replies to the latest turn side by side. Both engines share this
// machine's cores, and the panel says so.
//
// A model with sliding-window layers adds a row of used blocks per kind of
// layer (below the figures), and B's form, while untouched, starts as A's
// settings with the window layers kept whole (--swa-full): freeing what
// leaves the window against keeping it, the comparison such a model is
// about. For other models B starts contiguous, the classic comparison.
//
// Object names for tests: compareSettings, startCompare, stopCompare,
// compareTable, compareNote, replyA, replyB, mapBBox.
class ComparePanel : public QWidget {
    Q_OBJECT
public:
    // What each engine runs: the table's first rows.
    enum SettingRow { KvFormat, BlockSize, PoolBlocks, PoolMib, Allocation, Preemption, PrefixCache, WindowLayers,
                      kSettingRows };
    // The measured figures, below them; then one row per kind of layer.
    // The requests each engine ended, by how (its snapshot's own counts).
    enum Row { GenerationTps, PromptTps, Running, Waiting, Preemptions, RequestsCompleted, RequestsAborted,
               RequestsFailed, BlocksUsed, BlocksHeld, BlocksPerRunning, TokenOccupancy, InternalWaste,
               ReservedWaste, ExternalFragmentation, TtftP50, TtftP95, kRows };

    explicit ComparePanel(QWidget* parent = nullptr);
    ~ComparePanel() override;

    bool isRunning() const { return engineB_ != nullptr; }
    EngineThread* engineB() const { return engineB_.get(); } // null while B is stopped
    LivePoolPanel* mapA() const { return mapA_; }
    LivePoolPanel* mapB() const { return mapB_; }
    // Columns: 0 A, 1 B, 2 B − A, followed by "▲" (B better) or "▼" (B
    // worse) where the figure has a better direction (settings: A and B only).
    QString cell(Row row, int column) const;
    QString settingCell(SettingRow row, int column) const;
    // The rows of blocks used per kind of layer (none for one group): each
    // kind's title ("sliding window 512, 22 layers") and its cells.
    QStringList kindRows() const { return kinds_; }
    QString kindCell(int kind, int column) const;
    QString replyText(int side) const; // 0: A, 1: B

    // What A runs: B loads the same model, through `models` when A opens
    // its models there too (then both share one Model and its packed weights).
    void setModelSource(const ModelSource& source);
    void setSharedModels(std::shared_ptr<SharedModels> models) { models_ = std::move(models); }
    // The model's KV shape, for B's settings form.
    void setModelShape(const ModelShape& shape);
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
    // A's configuration, as A's engine applied it.
    void setConfigA(const kvscope::EngineConfig& config);
    // A's reply text as it streams (the chat's, for the latest turn).
    void appendTextA(int chat, const QString& text);

signals:
    void errorOccurred(const QString& message);
    void runningChanged(bool running);
    void snapshotBShown(std::shared_ptr<const kvscope::EngineSnapshot> snapshot);

private:
    QWidget* buildSide();
    QWidget* buildReplies();
    void connectB(const EngineConfig& config);
    void showSnapshotB(std::shared_ptr<const EngineSnapshot> snapshot);
    void appendTextB(int chat, const QString& text);
    void resetB();
    LivePoolPanel* newMapB();
    void fillTable();
    QString verdict(int row, std::optional<double> difference) const;
    void followKinds(const std::shared_ptr<const EngineSnapshot>& snapshot);
    void fillKindRows();
    void suggestB();
    void fillSettings(int column, const std::optional<EngineConfig>& config,
                      const std::shared_ptr<const EngineSnapshot>& snapshot);

    std::optional<ModelSource> source_;
    std::unique_ptr<EngineThread> engineB_;
    std::shared_ptr<SharedModels> models_;
    // Engine B's request ids → chats; an engine's ids mean nothing to the
    // next, so it is cleared whenever B's engine is replaced.
    std::optional<EngineConfig> configA_, configB_;
    std::shared_ptr<const EngineSnapshot> lastA_, lastB_;
    int latestChat_ = -1; // the chat whose latest turn the replies show
    QStringList kinds_;   // the kinds of layer the per-kind rows show
    // What the panel last put in B's form itself; while the form still
    // holds it, the panel may suggest another (suggestB).
    EngineConfig suggestedB_;
    bool modelHasWindows_ = false; // the model's shape says so (A's pool says so too, once it comes)
    EngineSettingsPanel* settings_;
    QPushButton* start_;
    QPushButton* stop_;
    QLabel* note_;
    LivePoolPanel* mapA_;
    LivePoolPanel* mapB_;
    QGroupBox* mapBBox_;
    QTableWidget* table_;
    QPlainTextEdit* replyA_;
    QPlainTextEdit* replyB_;
    QTabWidget* sideTabs_; // B's settings | the latest replies
};

} // namespace kvscope::ui
