#pragma once

#include <QMainWindow>

namespace kvscope::ui {

class PlaygroundPanel;

// The kvscope window: one tab per panel, the allocator playground first.
// The status bar says where KV pools live, honestly.
class MainWindow : public QMainWindow {
    Q_OBJECT
public:
    explicit MainWindow(QWidget* parent = nullptr);

    PlaygroundPanel* playground() const { return playground_; }

private:
    void buildMenus();
    void buildStatusBar();
    void saveScreenshot();
    void showAbout();

    PlaygroundPanel* playground_;
};

} // namespace kvscope::ui
