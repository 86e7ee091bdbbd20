#pragma once

#include <QWidget>

class QComboBox;
class QListWidget;

namespace kvscope::ui {

// What the window shows before a model is loaded: open a GGUF, the recent
// files, the allocator playground, or a synthetic model of a real shape.
//
// Object names for tests: openModel, recentFiles, openPlayground,
// syntheticPreset, buildSynthetic.
class StartPage : public QWidget {
    Q_OBJECT
public:
    explicit StartPage(QWidget* parent = nullptr);

    void setRecentFiles(const QStringList& files);

signals:
    void openFileRequested();
    void recentFileRequested(const QString& path);
    void playgroundRequested();
    void syntheticRequested(const QString& preset);

private:
    QListWidget* recent_;
    QComboBox* preset_;
};

} // namespace kvscope::ui
