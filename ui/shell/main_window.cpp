#include "ui/shell/main_window.h"

#include <utility>

#include <QActionGroup>
#include <QApplication>
#include <QCloseEvent>
#include <QDockWidget>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QLabel>
#include <QMenuBar>
#include <QMessageBox>
#include <QMimeData>
#include <QProgressDialog>
#include <QScrollArea>
#include <QSettings>
#include <QSplitter>
#include <QStackedWidget>
#include <QStatusBar>
#include <QTabWidget>

#include "engine/core/error.h"
#include "ui/shell/app_info.h"
#include "ui/chat/chat_palette.h"
#include "ui/chat/chat_panel.h"
#include "ui/chat/chat_tabs.h"
#include "ui/compare/compare_panel.h"
#include "ui/server/connect_dialog.h"
#include "ui/shell/dock_shares.h"
#include "ui/dashboards/fragmentation_panel.h"
#include "ui/settings/kv_calculator_dialog.h"
#include "ui/dashboards/kv_quant_panel.h"
#include "ui/dashboards/snapshot_history.h"
#include "ui/dashboards/throughput_panel.h"
#include "ui/settings/workload_dock.h"
#include "ui/bridge/engine_controller.h"
#include "ui/settings/engine_settings_panel.h"
#include "ui/shell/latency_probe.h"
#include "ui/blockmap/live_pool_panel.h"
#include "ui/settings/model_info_panel.h"
#include "ui/playground/playground_panel.h"
#include "ui/shell/recent_files.h"
#include "ui/server/recent_servers.h"
#include "ui/bridge/remote_controller.h"
#include "ui/server/server_panel.h"
#include "ui/server/server_view_model.h"
#include "ui/shell/start_page.h"
#include "ui/shell/theme.h"

namespace kvscope::ui {
namespace {

constexpr int kStatusMessageMs = 6000;
const QString kGeometryKey = QStringLiteral("mainWindow/geometry");
const QString kStateKey = QStringLiteral("mainWindow/state");
const QString kDockSharesKey = QStringLiteral("mainWindow/dockShares");

// The side docks' width and the dashboards' height as shares of the window,
// until the user drags them elsewhere.
const DockShares::Shares kDefaultDockShares{{Qt::RightDockWidgetArea, 0.25}, {Qt::BottomDockWidgetArea, 0.35}};

// Each dock by its --show name and its object name (saveState keys on the
// object names: renaming one loses the users' saved layouts).
struct DockName {
    const char* shown;
    const char* object;
};
constexpr DockName kDockNames[] = {{"model", "modelDock"},
                                   {"settings", "engineSettingsDock"},
                                   {"workload", "workloadDock"},
                                   {"fragmentation", "fragmentationDock"},
                                   {"throughput", "throughputDock"},
                                   {"kv-quant", "kvQuantDock"}};

QString objectNameOf(const char* shown) {
    for (const DockName& d : kDockNames)
        if (qstrcmp(d.shown, shown) == 0)
            return QString::fromLatin1(d.object);
    Q_UNREACHABLE();
    return {};
}

// The docks that drive or describe the local engine, hidden while connected
// to a server (the dashboards stay for a kvscope server's snapshots).
constexpr const char* kLocalEngineDocks[] = {"model", "settings", "workload"};

const QStringList kPageNames{QStringLiteral("chat"), QStringLiteral("compare"), QStringLiteral("playground")};

QVariantMap toVariant(const DockShares::Shares& shares) {
    QVariantMap map;
    for (const auto& [area, share] : shares)
        map.insert(QString::number(area), share);
    return map;
}

// The shares the user chose in an earlier run.
DockShares::Shares savedShares(const QVariant& saved) {
    DockShares::Shares shares;
    const QVariantMap map = saved.toMap();
    for (auto it = map.begin(); it != map.end(); ++it) {
        const double share = it.value().toDouble();
        if (share > 0 && share < 1)
            shares[static_cast<Qt::DockWidgetArea>(it.key().toInt())] = share;
    }
    return shares;
}
const QString kEngineConfigKey = QStringLiteral("engine/config"); // the applied EngineConfig, as JSON

bool isModelFile(const QUrl& url) {
    return url.isLocalFile() && url.toLocalFile().endsWith(QStringLiteral(".gguf"), Qt::CaseInsensitive);
}

// Docked panels scroll when small rather than force the window beyond a
// laptop screen.
QScrollArea* scrolled(QWidget* panel) {
    auto* area = new QScrollArea;
    area->setWidget(panel);
    area->setWidgetResizable(true);
    area->setFrameShape(QFrame::NoFrame);
    return area;
}

} // namespace

MainWindow::MainWindow(QWidget* parent)
    : QMainWindow(parent),
      engine_(new EngineThread(EngineSettingsPanel::savedConfig(kEngineConfigKey, EngineController::defaultConfig()),
                               this)),
      tabs_(new QTabWidget),
      chatStack_(new QStackedWidget),
      startPage_(new StartPage),
      chats_(new ChatTabs),
      pool_(new LivePoolPanel),
      playground_(new PlaygroundPanel),
      playgroundPage_(scrolled(playground_)),
      modelInfo_(new ModelInfoPanel),
      settings_(new EngineSettingsPanel),
      history_(std::make_shared<SnapshotHistory>()),
      fragmentation_(new FragmentationPanel(history_)),
      throughput_(new ThroughputPanel(history_)),
      kvQuant_(new KvQuantPanel),
      workload_(new WorkloadDock(this)),
      compare_(new ComparePanel),
      modelLabel_(new QLabel(tr("No model"))),
      backendLabel_(new QLabel),
      poolLabel_(new QLabel(tr("KV pool: host RAM"))),
      usageLabel_(new QLabel),
      dockShares_(new DockShares(this, kDefaultDockShares)),
      remote_(new RemoteController(this)),
      serverPanel_(new ServerPanel),
      serverPage_(scrolled(serverPanel_)) {
    setWindowTitle(QStringLiteral("kvscope"));
    setWindowIcon(appIcon());
    setAcceptDrops(true);
    chatStack_->addWidget(startPage_);
    chatStack_->addWidget(buildChatWorkspace());
    tabs_->setDocumentMode(true);
    tabs_->addTab(chatStack_, tr("Chat"));
    tabs_->addTab(scrolled(compare_), tr("Compare A/B"));
    tabs_->addTab(playgroundPage_, tr("Allocator playground"));
    setCentralWidget(tabs_);
    buildDocks();
    connect(tabs_, &QTabWidget::currentChanged, this, &MainWindow::showEngineDocks);
    buildMenus();
    buildStatusBar();
    // Compare A/B's engine B opens A's model through the same SharedModels:
    // one Model, one mapping, one packed copy of its weights.
    const auto models = std::make_shared<SharedModels>();
    engine_->setSharedModels(models);
    compare_->setSharedModels(models);
    connectEngine();
    settings_->setConfig(EngineSettingsPanel::savedConfig(kEngineConfigKey, EngineController::defaultConfig()));
    settings_->persistAs(kEngineConfigKey);
    refreshRecentLists();
    resize(1280, 800);
    const QSettings settings;
    restoreGeometry(settings.value(kGeometryKey).toByteArray());
    restoreState(settings.value(kStateKey).toByteArray());
    dockShares_->setChosen(savedShares(settings.value(kDockSharesKey)));
}

void MainWindow::showEvent(QShowEvent* event) {
    QMainWindow::showEvent(event);
    // Here, not before the first show: which dock is the front tab of its
    // group shows only once they are on screen.
    showEngineDocks();
    // Ask for the keyboard: without a window manager (a bare X server)
    // nothing makes a new window active, and Qt fires no shortcut, Ctrl+O
    // included, until a click does; a window manager grants it anyway.
    if (!event->spontaneous())
        activateWindow();
}

MainWindow::~MainWindow() = default;

QWidget* MainWindow::buildChatWorkspace() {
    auto* split = chatSplitter_ = new QSplitter(Qt::Horizontal);
    split->setObjectName(QStringLiteral("chatSplitter"));
    split->addWidget(chats_);
    split->addWidget(serverPage_); // instead of the chats while connected to a server
    split->addWidget(pool_);
    serverPage_->hide();
    split->setStretchFactor(0, 1);
    split->setStretchFactor(1, 1);
    split->setStretchFactor(2, 1);
    connect(chats_, &ChatTabs::submitRequested, engine_, &EngineThread::submitChat);
    connect(chats_, &ChatTabs::stopRequested, engine_, &EngineThread::abortChat);
    return split;
}

void MainWindow::buildDocks() {
    const auto dock = [this](QWidget* content, const QString& title, const char* name) {
        auto* d = new QDockWidget(title, this);
        d->setObjectName(objectNameOf(name)); // saveState needs it
        d->setWidget(content);
        addDockWidget(Qt::RightDockWidgetArea, d);
        return d;
    };
    QDockWidget* info = dock(modelInfo_, tr("Model"), "model");
    workload_->setObjectName(objectNameOf("workload"));
    workload_->setWidget(scrolled(workload_->widget()));
    addDockWidget(Qt::RightDockWidgetArea, workload_);
    QDockWidget* engine = dock(scrolled(settings_), tr("Engine settings"), "settings");
    tabifyDockWidget(info, engine);
    tabifyDockWidget(info, workload_);
    info->raise();

    // The dashboards under the chat: each fed the same snapshots as the block map.
    QDockWidget* waste = dock(scrolled(fragmentation_), tr("Fragmentation"), "fragmentation");
    QDockWidget* speed = dock(scrolled(throughput_), tr("Throughput"), "throughput");
    QDockWidget* quant = dock(scrolled(kvQuant_), tr("KV quantization"), "kv-quant");
    for (QDockWidget* d : {waste, speed, quant})
        addDockWidget(Qt::BottomDockWidgetArea, d);
    tabifyDockWidget(waste, speed);
    tabifyDockWidget(waste, quant);
    waste->raise();
}

// The docks describe the main engine: without a model they would frame an
// empty window, and the other tabs (Compare A/B's engines, the playground's
// pools) need the room. Docks hidden here come back as they were.
// Connected to a server, only the dashboards stay, and only while it sends
// engine snapshots (a kvscope server).
void MainWindow::showEngineDocks() {
    const bool chatShown = tabs_->currentWidget() == chatStack_;
    if (chatShown && (isConnected() ? remoteEngine_ : hasModel())) {
        restoreHiddenDocks();
        if (isConnected())
            hideDocks(false);
        dockShares_->apply();
        return;
    }
    hideDocks(true);
}

// Hides every docked dock (`all`) or those of the local engine, keeping
// them to come back as they were.
void MainWindow::hideDocks(bool all) {
    QList<QDockWidget*> docks;
    if (all)
        docks = findChildren<QDockWidget*>();
    else
        for (const char* name : kLocalEngineDocks)
            docks << findChild<QDockWidget*>(objectNameOf(name));
    for (QDockWidget* d : docks)
        if (!d->isHidden() && !d->isFloating()) {
            docksHidden_.push_back({d, !d->visibleRegion().isEmpty()}); // a tab group's others are out of sight
            d->hide();
        }
}

void MainWindow::restoreHiddenDocks() {
    const std::vector<HiddenDock> hidden = std::exchange(docksHidden_, {});
    for (const HiddenDock& h : hidden)
        h.dock->show();
    for (const HiddenDock& h : hidden)
        if (h.raised)
            h.dock->raise();
}

QStringList MainWindow::pageNames() { return kPageNames; }

std::optional<MainWindow::Page> MainWindow::parsePage(const QString& name) {
    const qsizetype index = kPageNames.indexOf(name);
    if (index < 0)
        return std::nullopt;
    return static_cast<Page>(index);
}

void MainWindow::showPage(Page page) {
    switch (page) {
    case Page::Chat: tabs_->setCurrentWidget(chatStack_); break;
    case Page::Compare: tabs_->setCurrentIndex(1); break;
    case Page::Playground: showPlayground(); break;
    }
}

QStringList MainWindow::dockNames() {
    QStringList names;
    for (const DockName& d : kDockNames)
        names << QString::fromLatin1(d.shown);
    return names;
}

bool MainWindow::raiseDock(const QString& name) {
    if (!dockNames().contains(name))
        return false;
    auto* dock = findChild<QDockWidget*>(objectNameOf(qPrintable(name)));
    dock->show();
    dock->raise();
    return true;
}

void MainWindow::buildMenus() {
    QMenu* file = menuBar()->addMenu(tr("&File"));
    QAction* open = file->addAction(tr("&Open Model..."), this, &MainWindow::chooseModelFile);
    open->setShortcut(QKeySequence::Open);
    QMenu* recent = file->addMenu(tr("Open &Recent"));
    recent->setObjectName(QStringLiteral("recentMenu"));
    connect(recent, &QMenu::aboutToShow, this, [this, recent] {
        recent->clear();
        for (const QString& path : RecentFiles::list())
            recent->addAction(path, this, [this, path] { openModel(ModelSource::file(path)); });
        recent->setEnabled(true);
    });
    file->addSeparator();
    file->addAction(tr("&Connect to Server..."), this, &MainWindow::chooseServer);
    QMenu* servers = file->addMenu(tr("Recent Ser&vers"));
    servers->setObjectName(QStringLiteral("recentServersMenu"));
    connect(servers, &QMenu::aboutToShow, this, [this, servers] {
        servers->clear();
        for (const ConnectText& text : RecentServers::list())
            servers->addAction(RecentServers::label(text), this, [this, text] { connectToServer(text); });
    });
    disconnect_ = file->addAction(tr("&Disconnect"), this, &MainWindow::disconnectFromServer);
    disconnect_->setEnabled(false);
    file->addSeparator();
    QAction* screenshot = file->addAction(tr("Save &Screenshot..."), this, &MainWindow::saveScreenshot);
    screenshot->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_S));
    QAction* csv = file->addAction(tr("&Export Snapshot History (CSV)..."), this, &MainWindow::exportHistoryCsv);
    csv->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_E));
    file->addSeparator();
    QAction* quit = file->addAction(tr("&Quit"), qApp, &QApplication::quit);
    quit->setShortcut(QKeySequence::Quit);

    QMenu* chat = menuBar()->addMenu(tr("&Chat"));
    QAction* newChat = chat->addAction(tr("&New Chat"), chats_, &ChatTabs::newChat);
    newChat->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_T));
    QAction* close = chat->addAction(tr("&Close Chat"), this, [this] { chats_->closeChat(chats_->currentIndex()); });
    close->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_W));
    QAction* stop = chat->addAction(tr("&Stop Generating"), this, [this] {
        if (ChatPanel* panel = chats_->current())
            panel->stop();
    });
    stop->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_Period));
    localEngineActions_ = {newChat, close, stop};

    QMenu* view = menuBar()->addMenu(tr("&View"));
    QAction* chatTab = view->addAction(tr("&Chat"), this, [this] { showPage(Page::Chat); });
    chatTab->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_1));
    QAction* compareTab = view->addAction(tr("Compare &A/B"), this, [this] { showPage(Page::Compare); });
    compareTab->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_2));
    QAction* playgroundTab = view->addAction(tr("Allocator &Playground"), this, &MainWindow::showPlayground);
    playgroundTab->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_3));
    view->addSeparator();
    for (QDockWidget* d : findChildren<QDockWidget*>())
        view->addAction(d->toggleViewAction());
    view->addSeparator();
    buildThemeMenu(view);

    QMenu* tools = menuBar()->addMenu(tr("&Tools"));
    QAction* calculator = tools->addAction(tr("KV &Calculator..."), this, &MainWindow::showKvCalculator);
    calculator->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_K));
    QAction* startLoad = tools->addAction(tr("Start &Workload"), workload_, &WorkloadDock::requestStart);
    startLoad->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_R));
    QAction* stopLoad = tools->addAction(tr("St&op Workload"), workload_, &WorkloadDock::requestStop);
    stopLoad->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_R));
    localEngineActions_.insert(localEngineActions_.end(), {startLoad, stopLoad});

    QMenu* help = menuBar()->addMenu(tr("&Help"));
    help->addAction(tr("&About kvscope"), this, &MainWindow::showAbout);
}

void MainWindow::buildThemeMenu(QMenu* view) {
    QMenu* menu = view->addMenu(tr("&Theme"));
    menu->setObjectName(QStringLiteral("themeMenu"));
    auto* group = new QActionGroup(menu);
    const std::pair<Theme, QString> choices[] = {
        {Theme::System, tr("&System")}, {Theme::Light, tr("&Light")}, {Theme::Dark, tr("&Dark")}};
    for (const auto& [theme, label] : choices) {
        QAction* action = menu->addAction(label, this, [theme] {
            applyTheme(theme);
            saveTheme(theme);
        });
        action->setObjectName(QStringLiteral("theme_%1").arg(themeName(theme)));
        action->setCheckable(true);
        action->setChecked(theme == currentTheme());
        group->addAction(action);
    }
}

void MainWindow::buildStatusBar() {
    modelLabel_->setObjectName(QStringLiteral("modelStatus"));
    backendLabel_->setObjectName(QStringLiteral("backendStatus"));
    poolLabel_->setObjectName(QStringLiteral("poolLocation"));
    usageLabel_->setObjectName(QStringLiteral("poolUsage"));
    for (QLabel* label : {modelLabel_, backendLabel_, poolLabel_, usageLabel_})
        statusBar()->addPermanentWidget(label);
    connect(playground_, &PlaygroundPanel::operationApplied, this,
            [this](const QString& operation) { statusBar()->showMessage(operation, kStatusMessageMs); });
    auto* latency = new UiLatencyProbe(this);
    statusBar()->setToolTip(latency->describe());
    connect(latency, &UiLatencyProbe::updated, this,
            [this, latency] { statusBar()->setToolTip(latency->describe()); });
}

void MainWindow::connectEngine() {
    EngineController* c = engine_->controller();
    connect(c, &EngineController::loadProgress, this, [this](const QString& stage) {
        if (progress_)
            progress_->setLabelText(stage);
    });
    connect(c, &EngineController::modelLoaded, this, &MainWindow::onModelLoaded);
    connect(c, &EngineController::modelLoadFailed, this, &MainWindow::onModelLoadFailed);
    connect(c, &EngineController::configApplied, settings_, &EngineSettingsPanel::setConfig);
    connect(c, &EngineController::configApplied, compare_, &ComparePanel::setConfigA);
    connect(c, &EngineController::errorOccurred, this,
            [this](const QString& message) { showError(tr("Engine"), message, QStringLiteral("engineError")); });
    connect(c, &EngineController::chatText, chats_, &ChatTabs::appendText);
    connect(c, &EngineController::chatText, compare_, &ComparePanel::appendTextA);
    connect(c, &EngineController::chatFinished, chats_, &ChatTabs::finishTurn);
    connect(c, &EngineController::chatFinished, this, &MainWindow::turnFinished);
    // While connected to a server, the window shows the server's snapshots, not the local engine's.
    connect(c, &EngineController::snapshotReady, this, [this](std::shared_ptr<const EngineSnapshot> snapshot) {
        lastLocal_ = snapshot;
        if (!isConnected())
            showSnapshot(std::move(snapshot));
    });
    const auto palette = [](const EngineSnapshot& s) { return chatPalette(s); };
    for (LivePoolPanel* map : {pool_, compare_->mapA()}) {
        connect(c, &EngineController::stepsRecorded, map, [this, map](const SnapshotBatch& steps) {
            if (!isConnected())
                map->addSteps(steps);
        });
        map->setPaletteMaker(palette);
    }
    connect(remote_, &RemoteController::sampleReady, this, &MainWindow::showServerSample);
    connect(serverPanel_, &ServerPanel::staleChanged, throughput_, &ThroughputPanel::setStale);
    connect(settings_, &EngineSettingsPanel::applyRequested, engine_, &EngineThread::applyConfig);
    connect(workload_, &WorkloadDock::startWorkloadRequested, engine_, &EngineThread::startWorkload);
    connect(workload_, &WorkloadDock::stopWorkloadRequested, engine_, &EngineThread::stopWorkload);
    // Compare A/B: engine B gets every turn and workload A gets.
    connect(chats_, &ChatTabs::submitRequested, compare_, &ComparePanel::submitChat);
    connect(chats_, &ChatTabs::stopRequested, compare_, &ComparePanel::abortChat);
    connect(workload_, &WorkloadDock::startWorkloadRequested, compare_, &ComparePanel::startWorkload);
    connect(workload_, &WorkloadDock::stopWorkloadRequested, compare_, &ComparePanel::stopWorkload);
    connect(compare_, &ComparePanel::errorOccurred, this,
            [this](const QString& message) { showError(tr("Compare A/B"), message, QStringLiteral("compareError")); });
    connect(c, &EngineController::workloadProgress, workload_, [this] { workload_->setWorkloadRunning(true); });
    connect(c, &EngineController::workloadStopped, workload_, [this] { workload_->setWorkloadRunning(false); });
    connect(startPage_, &StartPage::openFileRequested, this, &MainWindow::chooseModelFile);
    connect(startPage_, &StartPage::recentFileRequested, this,
            [this](const QString& path) { openModel(ModelSource::file(path)); });
    connect(startPage_, &StartPage::connectRequested, this, &MainWindow::chooseServer);
    connect(startPage_, &StartPage::recentServerRequested, this,
            [this](const ConnectText& text) { connectToServer(text); });
    connect(startPage_, &StartPage::playgroundRequested, this, &MainWindow::showPlayground);
    connect(startPage_, &StartPage::syntheticRequested, this,
            [this](const QString& preset) { openModel(ModelSource::synthetic(preset)); });
    connect(startPage_, &StartPage::modelDownloaded, this,
            [this](const QString& path) { openModel(ModelSource::file(path)); });
}

void MainWindow::openModel(const ModelSource& source) {
    if (progress_)
        return; // one load at a time
    disconnectFromServer(); // the window shows one engine: the model's
    loading_ = source;
    progress_ = new QProgressDialog(tr("Loading %1...").arg(source.label()), QString(), 0, 0, this);
    progress_->setObjectName(QStringLiteral("loadProgress"));
    progress_->setWindowTitle(tr("Loading model"));
    progress_->setCancelButton(nullptr); // a load cannot be interrupted halfway
    progress_->setWindowModality(Qt::WindowModal);
    progress_->setMinimumDuration(0);
    progress_->setAttribute(Qt::WA_DeleteOnClose);
    progress_->show();
    engine_->loadModel(source);
}

void MainWindow::submitPrompt(const QString& text) {
    if (!chats_->current())
        chats_->newChat();
    chats_->current()->submit(text);
}

void MainWindow::chooseModelFile() {
    const QString path = QFileDialog::getOpenFileName(this, tr("Open Model"), QString(), tr("GGUF models (*.gguf)"));
    if (!path.isEmpty())
        openModel(ModelSource::file(path));
}

void MainWindow::showPlayground() { tabs_->setCurrentWidget(playgroundPage_); }

void MainWindow::onModelLoaded(const ModelSummary& summary) {
    if (progress_)
        progress_->close();
    progress_ = nullptr;
    if (loading_ && !loading_->isSynthetic())
        RecentFiles::add(loading_->path);
    loading_.reset();
    refreshRecentLists();
    summary_ = summary;
    if (mode_ == Mode::NoModel)
        mode_ = Mode::LocalEngine;
    modelInfo_->setSummary(summary);
    kvQuant_->setModel(summary.model, summary.source.label());
    compare_->setModelSource(summary.source);
    const ModelShape shape{summary.source.label(), summary.config.kv_geometry(), summary.config.context_length,
                           summary.config.layer_windows()};
    settings_->setModelShape(shape);
    compare_->setModelShape(shape);
    workload_->setModelLimits(summary.config.vocab_size, summary.config.context_length);
    showLocalStatus();
    chats_->setTemplateNote(summary.chat_template_known
                                ? QString()
                                : tr("This model has no chat template kvscope knows: each turn is sent as plain text "
                                     "for the model to continue."));
    chats_->setReasoningMode(summary.reasoning);
    if (chats_->count() == 0)
        chats_->newChat();
    chatStack_->setCurrentIndex(1);
    tabs_->setCurrentWidget(chatStack_);
    showEngineDocks();
    emit modelReady();
}

// The status bar and title for the local engine: its model, backend and pool.
void MainWindow::showLocalStatus() {
    usageLabel_->clear();
    if (!summary_) {
        modelLabel_->setText(tr("No model"));
        modelLabel_->setToolTip({});
        backendLabel_->clear();
        poolLabel_->setText(tr("KV pool: host RAM"));
        setWindowTitle(QStringLiteral("kvscope"));
        return;
    }
    const ModelSummary& summary = *summary_;
    modelLabel_->setText(summary.source.isSynthetic() ? tr("%1 (random weights)").arg(summary.source.label())
                                                      : summary.source.label());
    modelLabel_->setToolTip(summary.source.isSynthetic() ? summary.source.label() : summary.source.path);
    backendLabel_->setText(backendText(summary.device, summary.threads));
    poolLabel_->setText(tr("KV pool: %1 blocks, %2, %3")
                            .arg(summary.kv_blocks)
                            .arg(bytesText(static_cast<double>(summary.kv_pool_bytes)))
                            .arg(kvLocationText(summary.device)));
    setWindowTitle(QStringLiteral("%1 \u2014 kvscope").arg(summary.source.label()));
}

void MainWindow::chooseServer() {
    ConnectDialog dialog(this);
    const std::vector<ConnectText> recent = RecentServers::list();
    if (!recent.empty())
        dialog.setText(recent.front());
    if (dialog.exec() == QDialog::Accepted)
        connectToServer(dialog.text());
}

bool MainWindow::connectToServer(const ConnectText& text) {
    attach::ConnectOptions options;
    try {
        options = connectOptions(text);
    } catch (const Error& e) {
        showError(tr("Cannot connect"), QString::fromUtf8(e.what()), QStringLiteral("connectError"));
        return false;
    }
    pendingServer_ = text; // remembered once it answers: a dead address is not offered again
    attach::RemoteSample connecting; // what the panel says until the first poll answers
    connecting.url = options.url;
    if (options.kind)
        connecting.kind = *options.kind;
    pool_->setIdleText(tr("Waiting for %1's first snapshot").arg(QString::fromStdString(options.url)));
    remote_->start(std::move(options));
    showServerSample(std::make_shared<const attach::RemoteSample>(std::move(connecting)));
    return true;
}

void MainWindow::disconnectFromServer() {
    if (!isConnected())
        return;
    remote_->stop();
    pendingServer_.reset();
    leaveConnectedView();
}

void MainWindow::showServerSample(std::shared_ptr<const attach::RemoteSample> sample) {
    if (!sample)
        return;
    if (!isConnected())
        enterConnectedView();
    const bool engine = sample->engine && sample->engine->pool;
    // Other kinds have no block map (the panel says why); a kvscope server's
    // (or one of a kind not known yet) waits for its first snapshot.
    pool_->setVisible(engine || sample->kind == attach::ServerKind::Kvscope);
    if (engine != remoteEngine_) {
        remoteEngine_ = engine;
        showEngineDocks();
    }
    serverPanel_->showSample(*sample);
    showServerStatus(*sample);
    if (pendingServer_ && sample->link == attach::LinkState::Live) {
        RecentServers::add(*pendingServer_);
        pendingServer_.reset();
        refreshRecentLists();
    }
    if (engine)
        showSnapshot(sample->engine);
    emit serverSampleShown(std::move(sample));
}

// The Chat tab turns into the server's view; the history starts again
// with the server's snapshots.
void MainWindow::enterConnectedView() {
    mode_ = Mode::Connected;
    remoteEngine_ = false;
    forgetShownEngine();
    enableLocalEngine(false);
    localSplit_ = chatSplitter_->sizes();
    chats_->hide();
    pool_->hide();
    serverPage_->show();
    chatSplitter_->setSizes({0, width() / 3, width() - width() / 3}); // the panel's figures beside the block map
    chatStack_->setCurrentIndex(1);
    tabs_->setCurrentWidget(chatStack_);
    showEngineDocks();
}

void MainWindow::leaveConnectedView() {
    mode_ = hasModel() ? Mode::LocalEngine : Mode::NoModel;
    remoteEngine_ = false;
    forgetShownEngine();
    enableLocalEngine(true);
    serverPage_->hide();
    chats_->show();
    pool_->show();
    // The split as the user left it; one never laid out (the start page
    // was showing) starts as the chat workspace does.
    const bool laidOut = localSplit_.size() == 3 && localSplit_[0] + localSplit_[2] > 0;
    chatSplitter_->setSizes(laidOut ? localSplit_ : QList<int>{width() / 2, 0, width() - width() / 2});
    chatStack_->setCurrentIndex(hasModel() ? 1 : 0);
    pool_->setIdleText(tr("No model loaded"));
    if (hasModel() && lastLocal_)
        showSnapshot(lastLocal_); // the local engine as it stands, not an empty map until its next step
    showLocalStatus();
    showEngineDocks();
}

// The window changes engine (local <-> server): the figures' history and the
// block map's replay start again, so no step of one sits before the other's.
// Compare A/B's side A shows only the local engine: it keeps its steps.
void MainWindow::forgetShownEngine() {
    history_->clear();
    throughput_->clear();
    pool_->clear();
}

// Chat, workloads, engine settings and Compare A/B run on the local engine:
// offered only while the window shows it.
void MainWindow::enableLocalEngine(bool enabled) {
    for (QAction* action : localEngineActions_)
        action->setEnabled(enabled);
    disconnect_->setEnabled(!enabled);
    const QString why = enabled ? QString()
                                : tr("This drives kvscope's own engine: off while the window watches a server "
                                     "(File > Disconnect).");
    const int compareTab = static_cast<int>(Page::Compare);
    tabs_->setTabEnabled(compareTab, enabled);
    tabs_->setTabToolTip(compareTab, why);
    // Their docks are hidden meanwhile; shown from the View menu, they still say no.
    for (QWidget* local : {static_cast<QWidget*>(settings_), workload_->widget()}) {
        local->setEnabled(enabled);
        local->setToolTip(why);
    }
    kvQuant_->setModel(enabled && summary_ ? summary_->model : nullptr,
                       enabled && summary_ ? summary_->source.label() : QString());
}

void MainWindow::showServerStatus(const attach::RemoteSample& sample) {
    const QString url = QString::fromStdString(sample.url);
    const bool answered = sample.data_age_s.has_value(); // before, the kind is a placeholder
    modelLabel_->setText(QString::fromStdString(sample.model.value_or(answered ? "model not reported" : "")));
    modelLabel_->setToolTip(url);
    const QString link = QString::fromUtf8(attach::link_state_name(sample.link));
    const QString kind = QString::fromStdString(server_kind_title(sample.kind));
    backendLabel_->setText(answered ? kind + QStringLiteral(" · ") + link : link);
    poolLabel_->setText(url);
    if (!sample.engine)
        usageLabel_->setText(sample.total.kv_usage ? tr("%1% KV used").arg(*sample.total.kv_usage * 100, 0, 'f', 1)
                                                    : QString());
    setWindowTitle(QStringLiteral("%1 \u2014 kvscope").arg(url));
}

void MainWindow::onModelLoadFailed(const QString& message) {
    if (progress_)
        progress_->close();
    progress_ = nullptr;
    const QString what = loading_ ? loading_->label() : tr("the model");
    loading_.reset();
    showError(tr("Could not load %1").arg(what), message, QStringLiteral("loadError"));
    emit modelFailed(message);
}

void MainWindow::showError(const QString& title, const QString& message, const QString& objectName) {
    statusBar()->showMessage(message, kStatusMessageMs);
    // Non-modal, so that the engine's messages never block the window.
    auto* box = new QMessageBox(QMessageBox::Warning, title, message, QMessageBox::Ok, this);
    box->setObjectName(objectName);
    box->setAttribute(Qt::WA_DeleteOnClose);
    box->open();
}

void MainWindow::showSnapshot(std::shared_ptr<const EngineSnapshot> snapshot) {
    if (!snapshot || !snapshot->pool)
        return;
    // A server's requests carry no chat's tag: they get the workload colours.
    const SequencePalette palette = chatPalette(*snapshot);
    if (!isConnected())
        chats_->showWaiting(*snapshot);
    pool_->setSnapshot(snapshot, palette);
    fragmentation_->setSnapshot(snapshot);
    throughput_->setSnapshot(snapshot);
    kvQuant_->setSnapshot(snapshot);
    if (!isConnected())
        compare_->showSnapshotA(snapshot, palette);
    showPoolUsage(*snapshot);
    emit snapshotShown(std::move(snapshot));
}

void MainWindow::showPoolUsage(const EngineSnapshot& snapshot) {
    QString usage = tr("%1% used").arg(snapshot.pool->fragmentation.block_occupancy() * 100, 0, 'f', 1);
    const DeviceSnapshot& device = snapshot.device;
    if (device.memory_total && device.memory_free) // the pool's GPU: its own free/total, from cudaMemGetInfo
        usage += tr(" · VRAM %1 free of %2")
                     .arg(bytesText(static_cast<double>(*device.memory_free)))
                     .arg(bytesText(static_cast<double>(*device.memory_total)));
    usageLabel_->setText(usage);
    usageLabel_->setToolTip(tr("KV blocks in use, in %1").arg(kvLocationText(device)));
}

void MainWindow::refreshRecentLists() {
    startPage_->setRecentFiles(RecentFiles::list());
    startPage_->setRecentServers(RecentServers::list());
}

void MainWindow::dragEnterEvent(QDragEnterEvent* event) {
    const QList<QUrl> urls = event->mimeData()->urls();
    if (urls.size() == 1 && isModelFile(urls.front()))
        event->acceptProposedAction();
}

void MainWindow::dropEvent(QDropEvent* event) {
    const QList<QUrl> urls = event->mimeData()->urls();
    if (urls.size() == 1 && isModelFile(urls.front())) {
        event->acceptProposedAction();
        openModel(ModelSource::file(urls.front().toLocalFile()));
    }
}

void MainWindow::closeEvent(QCloseEvent* event) {
    restoreHiddenDocks(); // the docks as the user left them
    QSettings settings;
    settings.setValue(kGeometryKey, saveGeometry());
    settings.setValue(kStateKey, saveState());
    settings.setValue(kDockSharesKey, toVariant(dockShares_->chosen()));
    QMainWindow::closeEvent(event);
}

void MainWindow::saveScreenshot() {
    const QString file = QFileDialog::getSaveFileName(this, tr("Save Screenshot"), QStringLiteral("kvscope.png"),
                                                      tr("PNG images (*.png)"));
    if (!file.isEmpty() && !grab().save(file))
        QMessageBox::warning(this, tr("Save Screenshot"), tr("Could not write %1.").arg(file));
}

void MainWindow::exportHistoryCsv() {
    const QString path = QFileDialog::getSaveFileName(this, tr("Export Snapshot History"),
                                                      QStringLiteral("kvscope-history.csv"), tr("CSV files (*.csv)"));
    if (path.isEmpty())
        return;
    QFile file(path);
    if (!file.open(QIODevice::WriteOnly | QIODevice::Truncate) || !history_->writeCsv(file))
        QMessageBox::warning(this, tr("Export Snapshot History"),
                             tr("Could not write %1: %2").arg(path, file.errorString()));
    else
        statusBar()->showMessage(tr("%1 snapshots written to %2").arg(history_->entries().size()).arg(path),
                                 kStatusMessageMs);
}

void MainWindow::showKvCalculator() {
    auto* dialog = new KvCalculatorDialog(this);
    dialog->setAttribute(Qt::WA_DeleteOnClose);
    if (summary_) {
        dialog->setLoadedModel(
            calc_model(summary_->config, summary_->tensors, summary_->source.label().toStdString()));
        dialog->setEngineSettings(parse_kv_dtype(summary_->kv_dtype), summary_->block_size);
    } else {
        const EngineConfig next = settings_->config();
        dialog->setEngineSettings(next.kv_dtype, next.block_size);
    }
    dialog->show();
}

void MainWindow::showAbout() {
    QMessageBox::about(
        this, tr("About kvscope"),
        tr("<b>kvscope %1</b><p>Chat with an LLM and watch its paged KV cache: which blocks each conversation "
           "holds, and how much memory is wasted and where.</p><p>The allocator playground applies the same "
           "operations to a paged (vLLM) and a contiguous (pre-vLLM) pool.</p>")
            .arg(appVersion()));
}

} // namespace kvscope::ui
