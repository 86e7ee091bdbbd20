#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <QObject>
#include <QString>
#include <QThread>

#include "engine/chat/chat_session.h"
#include "engine/engine.h"
#include "engine/engine_config.h"
#include "engine/engine_snapshot.h"
#include "engine/runtime/shared_models.h"
#include "engine/service/engine_service.h"
#include "engine/tokenizer/chat_template.h"
#include "engine/workload/workload.h"
#include "ui/bridge/chat_turn.h"
#include "ui/bridge/snapshot_metatype.h"
#include "ui/bridge/model_source.h"
#include "ui/bridge/model_summary.h"
#include "ui/blockmap/snapshot_replay.h"

class QTemporaryDir;

Q_DECLARE_METATYPE(kvscope::EngineConfig)

namespace kvscope::ui {

// The app's Qt adapter over an EngineService (engine/service), which runs
// the engine on a thread of its own. The controller lives on a worker
// thread (see EngineThread) where it opens models, builds services and
// encodes chat turns; commands are slots, meant to be invoked queued.
// What the service's thread reports comes back to the controller's thread
// queued, and leaves as signals carrying values only: text per chat
// (collected and sent with each snapshot, about 30 times a second at most),
// per-turn stats, and immutable EngineSnapshots. Every failure is a signal
// with the engine's message; nothing is swallowed.
//
//   UI thread --EngineThread::submitChat--> [controller thread] --submit()--> [service thread: steps]
//   UI thread <--signals-- [controller thread] <--posted by the Listener (ServiceObserver)--
class EngineController : public QObject {
    Q_OBJECT
public:
    static constexpr std::chrono::milliseconds kSnapshotInterval{33};
    // RequestParams::priority under the app's priority scheduling: a chat
    // turn is admitted before, and preempted after, any workload request.
    static constexpr std::int32_t kChatPriority = 0;
    static constexpr std::int32_t kWorkloadPriority = 1;

    explicit EngineController(EngineConfig config = defaultConfig(), QObject* parent = nullptr);
    ~EngineController() override;

    // The app's starting configuration: a KV pool sized for the model
    // opened (suggested_kv_budget_mib: every sequence at the full context,
    // at most 256 MiB, at least one full context), and priority scheduling.
    static EngineConfig defaultConfig();

    // Models are opened through `models` from now on: engines given the
    // same SharedModels share a model they both load.
    void setSharedModels(std::shared_ptr<SharedModels> models) { models_ = std::move(models); }

public slots:
    // Replaces the model (and the engine, aborting what is in flight).
    void loadModel(const kvscope::ui::ModelSource& source);
    // A new engine with this configuration for the loaded model; in-flight
    // chats end with FinishReason::Abort. Without a model it is kept for the next load.
    void applyConfig(const kvscope::EngineConfig& config);
    void submitChat(const kvscope::ui::ChatTurn& turn);
    void abortChat(int chat);
    // Requests arrive at the spec's times (Poisson rate, or all at once) and
    // generate exactly their lengths: the WorkloadFeeder `bench serve` uses.
    void startWorkload(const kvscope::WorkloadSpec& spec);
    void stopWorkload();

signals:
    void loadProgress(const QString& stage);
    void modelLoaded(const kvscope::ui::ModelSummary& summary);
    void modelLoadFailed(const QString& message);
    void configApplied(const kvscope::EngineConfig& config);
    void errorOccurred(const QString& message);
    void chatStarted(int chat);
    void chatText(int chat, const QString& text);
    void chatFinished(const kvscope::ui::TurnStats& stats);
    // submitted / total requests of the running workload; finished when it ends.
    void workloadProgress(quint32 submitted, quint32 finished, quint32 total);
    // The workload ended or was stopped; `aborted`: its requests the stop
    // aborted in the engine (0 when it ran to its end).
    void workloadStopped(quint32 aborted);
    void snapshotReady(std::shared_ptr<const kvscope::EngineSnapshot> snapshot);
    // Just before a snapshotReady: the snapshots of the steps run since the
    // last one and not published (oldest first, at most ReplayLimits), so a
    // replay can show a turn too fast for the publish rate.
    void stepsRecorded(kvscope::ui::SnapshotBatch steps);

private:
    using Clock = std::chrono::steady_clock;
    class Listener;
    struct ChatRequest {
        std::shared_ptr<RequestHandle> handle; // the service's: to cancel it; its client tag is the chat
        int chat() const { return static_cast<int>(handle->client_tag()); }
        std::uint32_t prompt_tokens = 0;
        std::uint32_t generated = 0;
        Clock::time_point submitted;
        std::optional<Clock::time_point> first_token;
        QString pending_text; // not yet sent
        std::vector<TokenId> reply;  // the ids sampled, for the chat's ChatSession
        std::string reply_text;
        std::uint32_t dropped_messages = 0; // TurnStats::dropped_messages
        std::uint32_t reply_limit = 0;      // TurnStats::reply_limit
    };
    ChatSession& sessionFor(const ChatTurn& turn);
    TurnEncoder encoder() const;
    // A built service and the listener it reports to, not yet in use.
    struct NextService {
        std::unique_ptr<Listener> listener;
        std::unique_ptr<EngineService> service;
    };
    NextService makeService(const EngineConfig& config, std::shared_ptr<const Model> model);
    void useService(NextService next);
    std::shared_ptr<const Model> openModel(const ModelSource& source);
    // What the Listener posts here, from the service's thread.
    void onOutput(const std::shared_ptr<RequestHandle>& handle, const RequestOutput& out, Clock::time_point at);
    void finishChat(ChatRequest c, const RequestOutput& out, Clock::time_point at);
    void onSnapshot(std::uint64_t service, std::shared_ptr<const EngineSnapshot> snapshot);
    void onStep(std::uint64_t service, std::shared_ptr<const EngineSnapshot> snapshot);
    void onWorkload(const WorkloadProgress& progress);
    void flushText();

    EngineConfig config_;
    std::shared_ptr<const Model> model_;
    std::optional<ModelSource> source_;
    // Where models are opened: another engine's SharedModels when it is
    // handed one (Compare A/B's B shares A's model and packed weights).
    std::shared_ptr<SharedModels> models_ = std::make_shared<SharedModels>();
    std::unique_ptr<ChatTemplate> template_;
    // Before service_: it hears the service until the service is gone.
    std::unique_ptr<Listener> listener_;
    std::uint64_t serviceNumber_ = 0; // service_'s, to tell its reports from a replaced one's
    std::unique_ptr<EngineService> service_;
    std::map<const RequestHandle*, ChatRequest> chats_;
    // Each chat as token ids and its context policy (engine/chat): valid for
    // the loaded model's vocabulary, so kept across Apply and forgotten on load.
    std::map<int, ChatSession> sessions_;
    bool workloadRunning_ = false;
    SnapshotRing unpublished_; // stepsRecorded's
};

// The engine's worker thread and its controller: commands are posted to the
// controller's thread and return at once. Destroying it stops the thread
// after the current step.
class EngineThread : public QObject {
    Q_OBJECT
public:
    explicit EngineThread(EngineConfig config = EngineController::defaultConfig(), QObject* parent = nullptr);
    ~EngineThread() override;

    // For connecting to its signals only: it lives on the worker thread.
    EngineController* controller() const { return controller_; }

    void loadModel(const ModelSource& source);
    void setSharedModels(std::shared_ptr<SharedModels> models);
    void applyConfig(const EngineConfig& config);
    void submitChat(const ChatTurn& turn);
    void abortChat(int chat);
    void startWorkload(const WorkloadSpec& spec);
    void stopWorkload();

private:
    template <typename F> void post(F&& command);

    QThread thread_;
    EngineController* controller_;
};

} // namespace kvscope::ui
