#include "ui/bridge/engine_controller.h"

#include <algorithm>
#include <exception>

#include <QDir>
#include <QFileInfo>
#include <QTemporaryDir>
#include <QTimer>

#include "engine/chat/conversation.h"
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

QString ModelSource::label() const {
    return isSynthetic() ? QStringLiteral("synthetic %1").arg(preset) : QFileInfo(path).fileName();
}

EngineController::EngineController(EngineConfig config, QObject* parent)
    : QObject(parent), config_(std::move(config)), arrivalTimer_(new QTimer(this)) {
    arrivalTimer_->setSingleShot(true);
    connect(arrivalTimer_, &QTimer::timeout, this, &EngineController::scheduleStep);
}

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

void EngineController::loadModel(const ModelSource& source) {
    try {
        auto model = openModel(source);
        const std::string path = model->file().path();
        emit loadProgress(tr("Building the engine..."));
        EngineConfig config = config_;
        config.model = path;
        auto engine = std::make_unique<Engine>(config, model);
        auto chatTemplate = std::make_unique<ChatTemplate>(ChatTemplate::for_model(model->file(), engine->tokenizer()));
        abortEverything();
        engine_ = std::move(engine);
        engine_->set_output_callback([this](const RequestOutput& out) { onOutput(out); });
        model_ = std::move(model);
        template_ = std::move(chatTemplate);
        conversations_.clear(); // another vocabulary: chats go on from their text
        source_ = source;
        config_ = config;
        emit configApplied(config_);
        emit modelLoaded(summarize(source, model_, *engine_, template_->description(), template_->supported()));
        publishSnapshot();
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
        auto engine = std::make_unique<Engine>(next, model_);
        abortEverything();
        engine_ = std::move(engine);
        engine_->set_output_callback([this](const RequestOutput& out) { onOutput(out); });
        config_ = next;
        emit configApplied(config_);
        emit modelLoaded(summarize(*source_, model_, *engine_, template_->description(), template_->supported()));
        publishSnapshot();
    } catch (const std::exception& e) {
        emit errorOccurred(tr("The configuration was not applied: %1").arg(errorText(e)));
    }
}

void EngineController::submitChat(const ChatTurn& turn) {
    TurnStats failed;
    failed.chat = turn.chat;
    failed.finish = FinishReason::Error;
    if (!engine_) {
        failed.error = "no model is loaded";
        emit chatFinished(failed);
        return;
    }
    const auto submitted = Clock::now();
    FittedTurn fitted;
    try {
        fitted = fitToContext(turn);
    } catch (const std::exception& e) {
        failed.error = e.what();
        emit chatFinished(failed);
        return;
    }
    const auto promptTokens = static_cast<std::uint32_t>(fitted.prompt.size());
    failed.dropped_messages = fitted.dropped_messages;
    const Admission admitted = engine_->add_request(std::move(fitted.prompt), fitted.params);
    if (const RequestRefusal* refused = admitted.refusal()) {
        conversations_.at(turn.chat).drop_last();
        failed.error = refused->message;
        failed.prompt_tokens = promptTokens;
        emit chatFinished(failed);
        return;
    }
    const RequestId id = admitted.id();
    ChatRequest& chat = chats_[id];
    chat.chat = turn.chat;
    chat.prompt_tokens = promptTokens;
    chat.submitted = submitted;
    chat.dropped_messages = fitted.dropped_messages;
    chat.reply_limit = fitted.reply_limit;
    emit chatStarted(turn.chat, id);
    scheduleStep();
}

TurnEncoder EngineController::encoder() const { return TurnEncoder::through(*template_, engine_->tokenizer()); }

// The chat's conversation up to the turn's new message: the one this
// controller kept, token-exact, when it holds the turn's user messages (the
// system prompt may have changed); otherwise (another model was loaded
// since) one rebuilt from the turn's text.
Conversation& EngineController::conversationFor(const ChatTurn& turn, const TurnEncoder& encoder) {
    const auto known = std::span(turn.messages).first(turn.messages.size() - 1);
    const bool hasSystem = !known.empty() && known.front().role == "system";
    const auto system = hasSystem ? std::optional(known.front().content) : std::nullopt;
    // Replies are compared by role only: the conversation holds their ids as sampled.
    const auto sameExchanges = [&](const Conversation& c) {
        const std::vector<ChatMessage> held = c.messages();
        return std::ranges::equal(std::span(held).subspan(c.system() ? 1 : 0), known.subspan(hasSystem ? 1 : 0),
                                  [](const ChatMessage& a, const ChatMessage& b) {
                                      return a.role == b.role && (a.role != "user" || a.content == b.content);
                                  });
    };
    const auto it = conversations_.find(turn.chat);
    if (it == conversations_.end() || !sameExchanges(it->second))
        return conversations_.insert_or_assign(turn.chat, Conversation::from_messages(known, encoder)).first->second;
    if (it->second.system() != system)
        it->second.set_system(system, encoder);
    return it->second;
}

// The conversation within the model's context (engine/chat): the new user
// message is appended to the chat's token ids; while the prompt and
// max_new_tokens do not fit, the oldest exchange goes (the system prompt
// stays); when the newest message alone still leaves less room than
// max_new_tokens, the reply gets what room there is.
EngineController::FittedTurn EngineController::fitToContext(const ChatTurn& turn) {
    if (turn.messages.empty() || turn.messages.back().role != "user")
        throw Error("a chat turn ends with the user's message");
    const TurnEncoder encode = encoder();
    Conversation& conversation = conversationFor(turn, encode);
    conversation.add_user(turn.messages.back().content, encode);
    const std::size_t before = conversation.messages().size();
    const std::size_t context = engine_->model().config().context_length;
    FittedTurn fitted{conversation.prompt_within(context, turn.params.max_new_tokens, encode), turn.params, 0, 0};
    fitted.params.priority = kChatPriority;
    fitted.params.client_tag = static_cast<std::uint64_t>(turn.chat); // the block map colours the chat by it
    fitted.dropped_messages = static_cast<std::uint32_t>(before - conversation.messages().size());
    if (context > 0 && fitted.prompt.size() < context && fitted.prompt.size() + fitted.params.max_new_tokens > context) {
        fitted.params.max_new_tokens = static_cast<std::uint32_t>(context - fitted.prompt.size());
        fitted.reply_limit = fitted.params.max_new_tokens;
    }
    return fitted;
}

void EngineController::abortChat(int chat) {
    if (!engine_)
        return;
    std::vector<RequestId> requests;
    for (const auto& [id, c] : chats_)
        if (c.chat == chat)
            requests.push_back(id);
    for (RequestId id : requests)
        engine_->abort(id); // finishChat runs from the output callback
    publishSnapshot();
}

void EngineController::startWorkload(const WorkloadSpec& spec) {
    if (!engine_) {
        emit errorOccurred(tr("Load a model before starting a workload."));
        return;
    }
    stopWorkload();
    WorkloadSpec fitted = spec;
    // Prompt ids must exist in this vocabulary, and requests must fit its context.
    fitted.vocab = model_->config().vocab_size;
    if (const std::uint32_t context = model_->config().context_length; context > 0)
        fitted.max_total = std::min(fitted.max_total, context);
    try {
        workload_.emplace(*engine_, make_workload(fitted), spec.n, kWorkloadPriority);
    } catch (const std::exception& e) {
        emit errorOccurred(tr("The workload was not started: %1").arg(errorText(e)));
        return;
    }
    emitWorkloadProgress();
    scheduleStep();
}

void EngineController::stopWorkload() {
    if (!workload_)
        return;
    arrivalTimer_->stop();
    const std::size_t aborted = workload_->stop(); // the aborts reach onOutput while the feeder still counts them
    workload_.reset();
    emit workloadStopped(static_cast<quint32>(aborted));
    publishSnapshot();
}

void EngineController::abortEverything() {
    stopWorkload();
    if (!engine_)
        return;
    std::vector<RequestId> requests;
    for (const auto& entry : chats_)
        requests.push_back(entry.first);
    for (RequestId id : requests)
        engine_->abort(id);
}

void EngineController::onOutput(const RequestOutput& out) {
    if (const auto it = chats_.find(out.request); it != chats_.end()) {
        ChatRequest& c = it->second;
        if (!out.tokens.empty() && !c.first_token)
            c.first_token = Clock::now();
        c.generated += static_cast<std::uint32_t>(out.tokens.size());
        c.reply.insert(c.reply.end(), out.tokens.begin(), out.tokens.end());
        c.reply_text += out.text;
        c.pending_text += QString::fromStdString(out.text);
        if (out.finish)
            finishChat(it->first, out);
        return;
    }
    if (workload_)
        workload_->on_output(out);
}

void EngineController::finishChat(RequestId request, const RequestOutput& out) {
    ChatRequest c = std::move(chats_.at(request));
    chats_.erase(request);
    // As the chat panel does: a failed turn never happened; a stopped one keeps what it said.
    if (Conversation& conversation = conversations_.at(c.chat); out.finish == FinishReason::Error)
        conversation.drop_last();
    else
        conversation.add_reply(std::move(c.reply), std::move(c.reply_text));
    if (!c.pending_text.isEmpty())
        emit chatText(c.chat, c.pending_text);
    const auto end = Clock::now();
    TurnStats stats{.chat = c.chat,
                    .prompt_tokens = c.prompt_tokens,
                    .generated_tokens = c.generated,
                    .ttft_s = c.first_token ? secondsBetween(c.submitted, *c.first_token) : 0,
                    .seconds = secondsBetween(c.submitted, end),
                    .finish = *out.finish,
                    .error = out.error,
                    .dropped_messages = c.dropped_messages,
                    .reply_limit = c.reply_limit};
    emit chatFinished(stats);
}

void EngineController::admitWorkloadArrivals() {
    if (!workload_)
        return;
    for (const WorkloadRejection& r : workload_->admit_arrivals())
        emit errorOccurred(
            tr("Workload request %1 was rejected: %2").arg(r.index + 1).arg(QString::fromStdString(r.error)));
}

void EngineController::emitWorkloadProgress() {
    emit workloadProgress(static_cast<quint32>(workload_->submitted()), static_cast<quint32>(workload_->ended()),
                          static_cast<quint32>(workload_->total()));
}

void EngineController::scheduleStep() {
    if (stepQueued_ || !engine_)
        return;
    stepQueued_ = true;
    // Queued: whatever commands arrived meanwhile run first.
    QMetaObject::invokeMethod(this, &EngineController::stepOnce, Qt::QueuedConnection);
}

void EngineController::stepOnce() {
    stepQueued_ = false;
    if (!engine_)
        return;
    admitWorkloadArrivals();
    if (engine_->has_work()) {
        try {
            engine_->step();
        } catch (const std::exception& e) {
            emit errorOccurred(tr("The engine failed a step: %1").arg(errorText(e)));
            abortEverything();
        }
    }
    if (workload_) {
        emitWorkloadProgress();
        if (workload_->done()) {
            workload_.reset();
            emit workloadStopped(0);
        }
    }
    if (engine_->has_work()) {
        maybePublish();
        scheduleStep();
        return;
    }
    publishSnapshot(); // the idle state, once
    if (const auto wait = workload_ ? workload_->seconds_to_next_arrival() : std::nullopt)
        arrivalTimer_->start(static_cast<int>(*wait * 1000)); // nothing to run until the next request arrives
}

void EngineController::flushText() {
    for (auto& [id, c] : chats_)
        if (!c.pending_text.isEmpty())
            emit chatText(c.chat, std::exchange(c.pending_text, {}));
}

void EngineController::publishSnapshot() {
    if (!engine_)
        return;
    flushText();
    lastSnapshot_ = Clock::now();
    if (!unpublished_.empty())
        emit stepsRecorded(unpublished_.take());
    emit snapshotReady(engine_->snapshot());
}

void EngineController::maybePublish() {
    if (Clock::now() - lastSnapshot_ >= kSnapshotInterval)
        publishSnapshot();
    else
        unpublished_.push(engine_->snapshot());
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
