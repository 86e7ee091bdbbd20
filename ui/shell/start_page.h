#pragma once

#include <vector>

#include <QWidget>

#include "net/hub/cached_models.h"
#include "ui/bridge/model_download.h"
#include "ui/server/connect_dialog.h"

class QComboBox;
class QLabel;
class QLineEdit;
class QListWidget;
class QListWidgetItem;
class QProgressBar;
class QPushButton;

namespace kvscope::ui {

// What the window shows before a model is loaded: open a GGUF, download one
// from the Hugging Face Hub (a suggested small chat model or any
// ORG/NAME[:QUANT], fetched by a ModelDownloader, with progress and Cancel),
// the recent files and the models already in the hub cache, connect to a
// server (or a recent one), the allocator playground, or a synthetic model
// of a real shape.
//
// Object names for tests: openModel, downloadSuggestions, downloadRepo,
// downloadModel, downloadProgressRow, downloadProgress, downloadStatus,
// cancelDownload, downloadError, recentFiles, connectServer, recentServers,
// openPlayground, syntheticPreset, buildSynthetic.
class StartPage : public QWidget {
    Q_OBJECT
public:
    explicit StartPage(QWidget* parent = nullptr);

    // The recent files, newest first, followed by the runnable models in the
    // hub cache the environment names (net/hub/hub_settings.h) that are not
    // among them.
    void setRecentFiles(const QStringList& files);
    // The servers as RecentServers lists them, newest first.
    void setRecentServers(const std::vector<ConnectText>& servers);

signals:
    void openFileRequested();
    void recentFileRequested(const QString& path);
    void connectRequested(); // the Connect to Server dialog, as File > Connect to Server...
    void recentServerRequested(const kvscope::ui::ConnectText& server);
    void playgroundRequested();
    void syntheticRequested(const QString& preset);
    void modelDownloaded(const QString& path); // a download ended (or the model was in the cache): open it

private:
    QWidget* buildDownloadSection();
    void startDownload(const QString& reference);
    void showDownloadProgress(const DownloadProgress& progress);
    void showDownloadFailure(hub::HubErrorKind kind, const QString& message);
    void showDownloadCancelled();
    void downloadEnded();
    void fillRecent();

    QListWidget* suggestions_;
    QLineEdit* repo_;
    QPushButton* download_;
    QWidget* progressRow_;
    QProgressBar* progressBar_;
    QLabel* status_;
    QLabel* downloadError_;
    ModelDownloader* downloader_;
    QListWidget* recent_;
    QStringList recentFiles_;
    QListWidget* recentServers_;
    std::vector<ConnectText> servers_; // recentServers_'s rows
    QComboBox* preset_;
};

} // namespace kvscope::ui
