#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include <QMainWindow>

#include "engine/engine_snapshot.h"
#include "ui/bridge/chat_turn.h"
#include "ui/bridge/snapshot_metatype.h"
#include "ui/bridge/model_source.h"
#include "ui/bridge/model_summary.h"
#include "ui/bridge/remote_sample_metatype.h"
#include "ui/chat/chat_palette.h"
#include "ui/server/connect_dialog.h"

class QAction;
class QDockWidget;
class QLabel;
class QMenu;
class QMessageBox;
class QProgressDialog;
class QSplitter;
class QStackedWidget;
class QTabWidget;

namespace kvscope::ui {

class ChatTabs;
class ComparePanel;
class DockShares;
class EngineSettingsPanel;
class FragmentationPanel;
class KvQuantPanel;
class SnapshotHistory;
class ThroughputPanel;
class WorkloadDock;
class EngineThread;
class LivePoolPanel;
class ModelInfoPanel;
class PlaygroundPanel;
class RemoteController;
class ServerPanel;
class StartPage;

// The kvscope window. Before a model is loaded the Chat tab is a start
// page, alone in the window; then it holds the chat tabs beside the live
// block map of the engine's pool, with the model's facts, the engine's
// settings and the dashboards in docks (shown with the Chat tab only).
// The engine runs on its own thread (EngineThread): this window only sends
// commands and paints the values that come back.
//
// Connected to a server (File > Connect to Server..., `--connect`), the
// Chat tab's chats give way to the server panel (ServerPanel): what kind of
// server it watches, how fresh its data is, its figures, slots or ranks;
// a kvscope server's engine snapshots go through showSnapshot like the
// local engine's, so the block map and dashboards work as for it. What
// drives the local engine (chat, engine settings, workloads, Compare A/B)
// is hidden or disabled meanwhile, and the local engine's snapshots are
// not shown.
class MainWindow : public QMainWindow {
    Q_OBJECT
public:
    explicit MainWindow(QWidget* parent = nullptr);
    ~MainWindow() override;

    enum class Page { Chat, Compare, Playground };
    // The pages by the names --tab takes: chat, compare, playground.
    static QStringList pageNames();
    static std::optional<Page> parsePage(const QString& name);
    void showPage(Page page);
    // The docks by the names --show takes: model, settings, workload,
    // fragmentation, throughput, kv-quant.
    static QStringList dockNames();
    // Brings the dock called `name` (one of dockNames()) to the front of its
    // tab group; false when there is no such dock.
    bool raiseDock(const QString& name);

    PlaygroundPanel* playground() const { return playground_; }
    ChatTabs* chats() const { return chats_; }
    LivePoolPanel* pool() const { return pool_; }
    ModelInfoPanel* modelInfo() const { return modelInfo_; }
    StartPage* startPage() const { return startPage_; }
    FragmentationPanel* fragmentation() const { return fragmentation_; }
    ThroughputPanel* throughput() const { return throughput_; }
    KvQuantPanel* kvQuant() const { return kvQuant_; }
    WorkloadDock* workload() const { return workload_; }
    ComparePanel* compare() const { return compare_; }
    const SnapshotHistory& history() const { return *history_; }
    // What the window shows: the start page (no model yet), the local
    // engine, or a server it is attached to (a local model may stay loaded
    // behind it, and comes back on disconnect).
    enum class Mode : std::uint8_t { NoModel, LocalEngine, Connected };
    Mode mode() const { return mode_; }
    bool hasModel() const { return summary_.has_value(); } // a local model is loaded
    ServerPanel* serverPanel() const { return serverPanel_; }
    bool isConnected() const { return mode_ == Mode::Connected; }

    // Loads a model on the engine thread, with a progress dialog; a failure
    // is shown in a dialog (object name "loadError") and changes nothing.
    void openModel(const ModelSource& source);
    // Sends `text` as a user message in the current chat.
    void submitPrompt(const QString& text);
    void showPlayground();
    // The one place the main engine's snapshots enter the window: fans each
    // out to every panel that paints it (block map, dashboards, Compare A/B's
    // side A, status bar), then emits snapshotShown. A snapshot without a
    // pool changes nothing.
    void showSnapshot(std::shared_ptr<const EngineSnapshot> snapshot);

    // Starts watching the server the text names (RemoteController), and
    // adds it to the recent servers. Text that cannot work is shown in a
    // dialog (object name "connectError") and changes nothing: false.
    bool connectToServer(const ConnectText& text);
    // Stops watching; back to the local engine's chat, or the start page.
    void disconnectFromServer();
    // The one place a server's samples enter the window (from the
    // RemoteController, at most ~10 a second): the server panel shows it,
    // a kvscope server's engine snapshot goes to showSnapshot. The first
    // one turns the window to its connected view. Then emits serverSampleShown.
    void showServerSample(std::shared_ptr<const kvscope::attach::RemoteSample> sample);

signals:
    void modelReady(); // a model (or a new configuration of it) is in place
    void modelFailed(const QString& message);
    void turnFinished(const kvscope::ui::TurnStats& stats);
    void snapshotShown(std::shared_ptr<const kvscope::EngineSnapshot> snapshot);
    void serverSampleShown(std::shared_ptr<const kvscope::attach::RemoteSample> sample);

protected:
    void dragEnterEvent(QDragEnterEvent* event) override;
    void dropEvent(QDropEvent* event) override;
    void closeEvent(QCloseEvent* event) override;
    void showEvent(QShowEvent* event) override;

private:
    QWidget* buildChatWorkspace();
    void buildDocks();
    void buildMenus();
    void buildThemeMenu(QMenu* view);
    void buildStatusBar();
    void showEngineDocks();
    void restoreHiddenDocks();
    void connectEngine();
    void chooseModelFile();
    void onModelLoaded(const ModelSummary& summary);
    void onModelLoadFailed(const QString& message);
    void showPoolUsage(const EngineSnapshot& snapshot);
    void showError(const QString& title, const QString& message, const QString& objectName);
    void refreshRecentLists(); // the start page's recent files and servers
    void chooseServer();
    void enterConnectedView();
    void leaveConnectedView();
    void forgetShownEngine();
    void enableLocalEngine(bool enabled);
    void showLocalStatus();
    void showServerStatus(const attach::RemoteSample& sample);
    void hideDocks(bool all);
    // Which local chat each request of the shown engine is: none for a server's.
    void saveScreenshot();
    void exportHistoryCsv();
    void showKvCalculator();
    void showAbout();

    EngineThread* engine_;
    QTabWidget* tabs_;
    QStackedWidget* chatStack_;
    StartPage* startPage_;
    ChatTabs* chats_;
    LivePoolPanel* pool_;
    PlaygroundPanel* playground_;
    QWidget* playgroundPage_; // the playground, scrolling on small screens
    ModelInfoPanel* modelInfo_;
    EngineSettingsPanel* settings_;
    std::shared_ptr<SnapshotHistory> history_; // one engine's figures, shared by the time-series panels
    FragmentationPanel* fragmentation_;
    ThroughputPanel* throughput_;
    KvQuantPanel* kvQuant_;
    WorkloadDock* workload_;
    ComparePanel* compare_;
    std::optional<ModelSummary> summary_;
    struct HiddenDock {
        QDockWidget* dock;
        bool raised; // the front tab of its group
    };
    std::vector<HiddenDock> docksHidden_; // by the window, not the user: no model, or another tab
    QProgressDialog* progress_ = nullptr;
    QLabel* modelLabel_;
    QLabel* backendLabel_;
    QLabel* poolLabel_;
    QLabel* usageLabel_;
    DockShares* dockShares_;
    Mode mode_ = Mode::NoModel;
    RemoteController* remote_;
    ServerPanel* serverPanel_;
    QWidget* serverPage_; // serverPanel_, scrolling
    QSplitter* chatSplitter_ = nullptr; // chats | server page | block map
    bool remoteEngine_ = false; // connected, and the server sends engine snapshots (kvscope)
    std::optional<ConnectText> pendingServer_; // connecting to it; joins the recent servers when it first answers
    // The local engine's newest snapshot, shown again on disconnect (the
    // engine publishes only when it steps), and the chat/map split as the
    // user left it before connecting.
    std::shared_ptr<const EngineSnapshot> lastLocal_;
    QList<int> localSplit_;
    QAction* disconnect_ = nullptr;
    std::vector<QAction*> localEngineActions_; // chat and workload actions: off while connected
    std::optional<ModelSource> loading_;
};

} // namespace kvscope::ui
