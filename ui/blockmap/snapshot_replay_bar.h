#pragma once

#include <QWidget>

class QLabel;
class QPushButton;
class QSlider;

namespace kvscope::ui {

class SnapshotReplay;

// The thin view of a SnapshotReplay: a slider over the kept snapshots (the
// right end is "live"), a Live button and, under them, a line saying what
// is shown.
// It changes nothing itself: moving the slider emits picked(index), the
// button emits liveRequested(), and display() redraws it from the model.
class SnapshotReplayBar : public QWidget {
    Q_OBJECT
public:
    explicit SnapshotReplayBar(QWidget* parent = nullptr);

    void display(const SnapshotReplay& replay);
    QSlider* slider() const { return slider_; }
    QString status() const;

signals:
    void picked(int index);
    void liveRequested();

private:
    QSlider* slider_;
    QPushButton* live_;
    QLabel* status_;
};

} // namespace kvscope::ui
