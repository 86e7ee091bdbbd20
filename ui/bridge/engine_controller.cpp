#include "ui/bridge/engine_controller.h"

#include <algorithm>
#include <exception>

#include <QDir>
#include <QFileInfo>
#include <QTemporaryDir>

#include "engine/chat/chat_session.h"
#include "engine/core/error.h"
#include "engine/model/synthetic_model.h"
#include "engine/presets/model_presets.h"
#include "engine/runtime/model.h"
#include "ui/bridge/background_priority.h"

namespace kvscope::ui {
namespace {

// Synthetic weights are Q4_0: the smallest file and the fastest forward
// pass of the types make-model writes, and the text is meaningless anyway.
constexpr GgmlType kSyntheticWeights = GgmlType::Q4_0;
constexpr std::uint64_t kSyntheticSeed = 1;

QString errorText(const std::exception& e) { return QString::fromUtf8(e.what()); }

double secondsBetween(std::chrono::steady_clock::time_point a, std::chrono::steady_clock::time_point b) {
    return std::chrono::duration<double>(b - a).count();
}

// Writes the preset's random-weight GGUF into `dir`; returns its path.
std::string writeSyntheticModel(const QString& preset, const QTemporaryDir& dir) {
    if (!dir.isValid())
        throw Error("cannot create a temporary folder for the synthetic model: " + dir.errorString().toStdString());
    const ModelGeometry& geometry = find_model_preset(preset.toStdString());
    const std::string path = QDir(dir.path()).filePath(preset + QStringLiteral(".gguf")).toStdString();
    write_synthetic_model(geometry, kSyntheticWeights, kSyntheticSeed, path);
    return path;
}

} // namespace

// The service's reports, as it makes them on its thread, posted to the
// controller's thread (queued, so in the order they were made). Each
// service gets its own Listener with its number: a report of a replaced
// service is known as such.
class EngineController::Listener final : public ServiceObserver {
public:
    Listener(EngineController* controller, std::uint64_t number) : controller_(controller), number_(number) {}

    void on_output(const std::shared_ptr<RequestHandle>& handle, const RequestOutput& out) override {
        post([c = controller_, handle, out, at = Clock::now()] { c->onOutput(handle, out, at); });
    }
    void on_snapshot(const std::shared_ptr<const EngineSnapshot>& snapshot) override {
        post([c = controller_, n = number_, snapshot] { c->onSnapshot(n, snapshot); });
    }
    void on_step(const std::shared_ptr<const EngineSnapshot>& snapshot) override {
        post([c = controller_, n = number_, snapshot] { c->onStep(n, snapshot); });
    }
    void on_workload(const WorkloadProgress& progress) override {
        post([c = controller_, progress] { c->onWorkload(progress); });
    }

private:
    template <typename F> void post(F&& report) {
        QMetaObject::invokeMethod(controller_, std::forward<F>(report), Qt::QueuedConnection);
    }

    EngineController* const controller_;
    const std::uint64_t number_;
};

QString ModelSource::label() const {
    return isSynthetic() ? QStringLiteral("synthetic %1").arg(preset) : QFileInfo(path).fileName();
}

EngineController::EngineController(EngineConfig config, QObject* parent) : QObject(parent), config_(std::move(config)) {}

EngineController::~EngineController() = default;

EngineConfig EngineController::defaultConfig() {
    EngineConfig config;
    config.num_blocks = 0;
    config.kv_budget_mib = 0; // suggested_kv_budget_mib for whichever model is opened
    config.scheduling_policy = SchedulingPolicy::Priority; // chat turns ahead of workload requests
    return config;
}

// The source's model, shared with any engine on the same SharedModels that
// has it open. A synthetic model's file lives as long as the model.
std::shared_ptr<const Model> EngineController::openModel(const ModelSource& source) {
    if (!source.isSynthetic()) {
        const std::string path = source.path.toStdString();
        return models_->open(SharedModels::file_key(path), [&] {
            emit loadProgress(tr("Reading %1...").arg(source.label()));
            return std::make_shared<const Model>(path);
        });
    }
    return models_->open("synthetic:" + source.preset.toStdString(), [&] {
        auto dir = std::make_shared<QTemporaryDir>();
        emit loadProgress(tr("Writing %1 with random weights...").arg(source.label()));
        const std::string path = writeSyntheticModel(source.preset, *dir);
        emit loadProgress(tr("Reading %1...").arg(source.label()));
        return std::shared_ptr<const Model>(new Model(path), [dir](const Model* model) { delete model; });
    });
}

// A service for `model` with `config`, reporting to a Listener of its own
// (numbered as the next service). Throws as Engine's constructor does.
EngineController::NextService EngineController::makeService(const EngineConfig& config,
                                                            std::shared_ptr<const Model> model) {
    ServiceOptions options;
    options.snapshot_interval = kSnapshotInterval;
    options.record_steps = true; // stepsRecorded: a replay of turns faster than the publish rate
    options.on_thread_start = &lowerCurrentThreadPriority;
    NextService next{std::make_unique<Listener>(this, serviceNumber_ + 1), nullptr};
    next.service = std::make_unique<EngineService>(config, std::move(model), options, next.listener.get());
    return next;
}

// Replaces the service: the old one's requests are aborted and end through
// its listener's reports (the old listener outlives the old service).
void EngineController::useService(NextService next) {
    std::swap(next.listener, listener_);
    std::swap(next.service, service_);
    next.service.reset();
    ++serviceNumber_;
    unpublished_.take();
}

void EngineController::loadModel(const ModelSource& source) {
    try {
        auto model = openModel(source);
        const std::string path = model->file().path();
        emit loadProgress(tr("Building the engine..."));
        EngineConfig config = config_;
        config.model = path;
        NextService next = makeService(config, model);
        auto chatTemplate =
            std::make_unique<ChatTemplate>(ChatTemplate::for_model(model->file(), next.service->tokenizer()));
        useService(std::move(next)); // nothing can fail from here on
        template_ = std::move(chatTemplate);
        model_ = std::move(model);
        sessions_.clear(); // another vocabulary: chats go on from their text
        source_ = source;
        config_ = config;
        emit configApplied(config_);
        emit modelLoaded(summarize(source, model_, *service_, *template_));
    } catch (const std::exception& e) {
        emit modelLoadFailed(errorText(e));
    }
}

void EngineController::applyConfig(const EngineConfig& config) {
    if (!model_) {
        config_ = config;
        emit configApplied(config_);
        return;
    }
    try {
        EngineConfig next = config;
        next.model = config_.model;
        useService(makeService(next, model_));
        for (auto& [chat, session] : sessions_)
            session.set_encoder(encoder()); // the new engine's tokenizer
        config_ = next;
        emit configApplied(config_);
        emit modelLoaded(summarize(*source_, model_, *service_, *template_));
    } catch (const std::exception& e) {
        emit errorOccurred(tr("The configuration was not applied: %1").arg(errorText(e)));
    }
}

void EngineController::submitChat(const ChatTurn& turn) {
    TurnStats failed;
    failed.chat = turn.chat;
    failed.finish = FinishReason::Error;
    if (!service_) {
        failed.error = "no model is loaded";
        emit chatFinished(failed);
        return;
    }
    const auto submitted = Clock::now();
    TurnPlan plan;
    try {
        if (turn.messages.empty() || turn.messages.back().role != "user")
            throw Error("a chat turn ends with the user's message");
        plan = sessionFor(turn).plan_turn(turn.messages.back().content, turn.params.max_new_tokens);
    } catch (const std::exception& e) {
        failed.error = e.what();
        emit chatFinished(failed);
        return;
    }
    RequestParams params = turn.params;
    params.max_new_tokens = plan.max_new_tokens;
    params.priority = kChatPriority;
    params.client_tag = static_cast<std::uint64_t>(turn.chat); // the block map colours the chat by it
    const auto promptTokens = static_cast<std::uint32_t>(plan.prompt.size());
    failed.dropped_messages = plan.dropped_messages;
    Submitted sent = service_->submit(std::move(plan.prompt), params);
    if (sent.refusal) {
        sessions_.at(turn.chat).drop_last();
        failed.error = sent.refusal->message;
        failed.prompt_tokens = promptTokens;
        emit chatFinished(failed);
        return;
    }
    ChatRequest& chat = chats_[sent.handle.get()];
    chat.handle = std::move(sent.handle);
    chat.prompt_tokens = promptTokens;
    chat.submitted = submitted;
    chat.dropped_messages = plan.dropped_messages;
    chat.reply_limit = plan.reply_limit;
    emit chatStarted(turn.chat);
}

TurnEncoder EngineController::encoder() const { return TurnEncoder::through(*template_, service_->tokenizer()); }

// The chat's session up to the turn's new message: the one this controller
// kept, token-exact, when it holds the turn's user messages (the system
// prompt may have changed); otherwise (another model was loaded since) one
// rebuilt from the turn's text.
ChatSession& EngineController::sessionFor(const ChatTurn& turn) {
    const auto known = std::span(turn.messages).first(turn.messages.size() - 1);
    const bool hasSystem = !known.empty() && known.front().role == "system";
    const auto system = hasSystem ? std::optional(known.front().content) : std::nullopt;
    // Replies are compared by role only: the session holds their ids as sampled.
    const auto sameExchanges = [&](const ChatSession& c) {
        const std::vector<ChatMessage> held = c.messages();
        return std::ranges::equal(std::span(held).subspan(c.system() ? 1 : 0), known.subspan(hasSystem ? 1 : 0),
                                  [](const ChatMessage& a, const ChatMessage& b) {
                                      return a.role == b.role && (a.role != "user" || a.content == b.content);
                                  });
    };
    const auto it = sessions_.find(turn.chat);
    if (it == sessions_.end() || !sameExchanges(it->second)) {
        const std::size_t context = service_->model().config().context_length;
        return sessions_.insert_or_assign(turn.chat, ChatSession::from_messages(known, encoder(), context))
            .first->second;
    }
    if (it->second.system() != system)
        it->second.set_system(system);
    return it->second;
}

void EngineController::abortChat(int chat) {
    for (const auto& [handle, c] : chats_)
        if (c.chat() == chat)
            service_->cancel(c.handle); // the turn ends with its Abort output
}

void EngineController::startWorkload(const WorkloadSpec& spec) {
    if (!service_) {
        emit errorOccurred(tr("Load a model before starting a workload."));
        return;
    }
    WorkloadSpec fitted = spec;
    // Prompt ids must exist in this vocabulary, and requests must fit its context.
    fitted.vocab = model_->config().vocab_size;
    if (const std::uint32_t context = model_->config().context_length; context > 0)
        fitted.max_total = std::min(fitted.max_total, context);
    std::vector<WorkloadRequest> requests;
    try {
        requests = make_workload(fitted);
    } catch (const std::exception& e) {
        emit errorOccurred(tr("The workload was not started: %1").arg(errorText(e)));
        return;
    }
    const auto total = static_cast<quint32>(requests.size());
    service_->start_workload(std::move(requests), spec.n, kWorkloadPriority); // replaces one that runs
    workloadRunning_ = true;
    emit workloadProgress(0, 0, total);
}

void EngineController::stopWorkload() {
    if (workloadRunning_ && service_)
        service_->stop_workload(); // workloadStopped comes with the service's report
}

void EngineController::onOutput(const std::shared_ptr<RequestHandle>& handle, const RequestOutput& out,
                                Clock::time_point at) {
    const auto it = chats_.find(handle.get());
    if (it == chats_.end())
        return;
    ChatRequest& c = it->second;
    if (!out.tokens.empty() && !c.first_token)
        c.first_token = at;
    c.generated += static_cast<std::uint32_t>(out.tokens.size());
    c.reply.insert(c.reply.end(), out.tokens.begin(), out.tokens.end());
    c.reply_text += out.text;
    c.pending_text += QString::fromStdString(out.text);
    if (out.finish) {
        ChatRequest done = std::move(c);
        chats_.erase(it);
        finishChat(std::move(done), out, at);
    }
}

void EngineController::finishChat(ChatRequest c, const RequestOutput& out, Clock::time_point at) {
    // As the chat panel does: a failed turn never happened; a stopped one keeps what it said.
    if (const auto session = sessions_.find(c.chat()); session != sessions_.end()) {
        if (out.finish == FinishReason::Error)
            session->second.drop_last();
        else
            session->second.add_reply(std::move(c.reply), std::move(c.reply_text));
    }
    if (!c.pending_text.isEmpty())
        emit chatText(c.chat(), c.pending_text);
    TurnStats stats{.chat = c.chat(),
                    .prompt_tokens = c.prompt_tokens,
                    .generated_tokens = c.generated,
                    .ttft_s = c.first_token ? secondsBetween(c.submitted, *c.first_token) : 0,
                    .seconds = secondsBetween(c.submitted, at),
                    .finish = *out.finish,
                    .error = out.error,
                    .dropped_messages = c.dropped_messages,
                    .reply_limit = c.reply_limit};
    emit chatFinished(stats);
}

// A replaced service's snapshots and steps are of an engine no longer shown.
void EngineController::onSnapshot(std::uint64_t service, std::shared_ptr<const EngineSnapshot> snapshot) {
    if (service != serviceNumber_)
        return;
    flushText();
    if (!unpublished_.empty())
        emit stepsRecorded(unpublished_.take());
    emit snapshotReady(std::move(snapshot));
}

void EngineController::onStep(std::uint64_t service, std::shared_ptr<const EngineSnapshot> snapshot) {
    if (service == serviceNumber_)
        unpublished_.push(std::move(snapshot));
}

void EngineController::onWorkload(const WorkloadProgress& progress) {
    for (const WorkloadRejection& r : progress.refused)
        emit errorOccurred(
            tr("Workload request %1 was rejected: %2").arg(r.index + 1).arg(QString::fromStdString(r.error)));
    emit workloadProgress(static_cast<quint32>(progress.submitted), static_cast<quint32>(progress.ended),
                          static_cast<quint32>(progress.total));
    if (progress.over && workloadRunning_) {
        workloadRunning_ = false;
        emit workloadStopped(static_cast<quint32>(progress.aborted));
    }
}

void EngineController::flushText() {
    for (auto& [handle, c] : chats_)
        if (!c.pending_text.isEmpty())
            emit chatText(c.chat(), std::exchange(c.pending_text, {}));
}

// --- EngineThread ---

EngineThread::EngineThread(EngineConfig config, QObject* parent)
    : QObject(parent), controller_(new EngineController(std::move(config))) {
    qRegisterMetaType<ModelSource>();
    qRegisterMetaType<ModelSummary>();
    qRegisterMetaType<ChatTurn>();
    qRegisterMetaType<TurnStats>();
    qRegisterMetaType<EngineConfig>();
    qRegisterMetaType<WorkloadSpec>();
    qRegisterMetaType<std::shared_ptr<const EngineSnapshot>>();
    thread_.setObjectName(QStringLiteral("kvscope engine"));
    connect(&thread_, &QThread::started, &lowerCurrentThreadPriority); // direct: runs on the engine thread
    controller_->moveToThread(&thread_);
    connect(&thread_, &QThread::finished, controller_, &QObject::deleteLater);
    thread_.start();
}

EngineThread::~EngineThread() {
    thread_.quit();
    thread_.wait();
}

template <typename F> void EngineThread::post(F&& command) {
    QMetaObject::invokeMethod(controller_, std::forward<F>(command), Qt::QueuedConnection);
}

void EngineThread::loadModel(const ModelSource& source) {
    post([c = controller_, source] { c->loadModel(source); });
}
void EngineThread::setSharedModels(std::shared_ptr<SharedModels> models) {
    post([c = controller_, models] { c->setSharedModels(models); });
}
void EngineThread::applyConfig(const EngineConfig& config) {
    post([c = controller_, config] { c->applyConfig(config); });
}
void EngineThread::submitChat(const ChatTurn& turn) {
    post([c = controller_, turn] { c->submitChat(turn); });
}
void EngineThread::abortChat(int chat) {
    post([c = controller_, chat] { c->abortChat(chat); });
}
void EngineThread::startWorkload(const WorkloadSpec& spec) {
    post([c = controller_, spec] { c->startWorkload(spec); });
}
void EngineThread::stopWorkload() {
    post([c = controller_] { c->stopWorkload(); });
}

} // namespace kvscope::ui
