#pragma once

#include <vector>

#include <QWidget>

#include "ui/server/connect_dialog.h"

class QComboBox;
class QListWidget;

namespace kvscope::ui {

// What the window shows before a model is loaded: open a GGUF, the recent
// files, connect to a server (or a recent one), the allocator playground,
// or a synthetic model of a real shape.
//
// Object names for tests: openModel, recentFiles, connectServer,
// recentServers, openPlayground, syntheticPreset, buildSynthetic.
class StartPage : public QWidget {
    Q_OBJECT
public:
    explicit StartPage(QWidget* parent = nullptr);

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

private:
    QListWidget* recent_;
    QListWidget* recentServers_;
    std::vector<ConnectText> servers_; // recentServers_'s rows
    QComboBox* preset_;
};

} // namespace kvscope::ui
