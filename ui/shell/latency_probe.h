#pragma once

#include <QElapsedTimer>
#include <QObject>
#include <QString>
#include <QTimer>

#include "ui/shell/latency_window.h"

namespace kvscope::ui {

// How quickly the window answers, measured in the app itself: a timer on
// the UI thread is due every kIntervalMs, and each time it fires, how late
// it is goes into a LatencyWindow (from the event loop's first pass on: the
// window's construction is no wait a user sees). Anything that keeps the UI thread busy
// (painting, handling a burst of snapshots) delays the next tick, as it
// delays a click or a key. Every kLogIntervalS the last interval's worst is
// logged ("ui" logger: info when over kBudgetMs, debug otherwise); the whole
// run's figures are logged at info when the probe ends (the app's exit).
class UiLatencyProbe : public QObject {
    Q_OBJECT
public:
    static constexpr int kIntervalMs = 25;
    static constexpr double kBudgetMs = 50; // issue 15: the window answers within 50 ms
    static constexpr int kLogIntervalS = 10;

    explicit UiLatencyProbe(QObject* parent = nullptr);
    ~UiLatencyProbe() override;

    const LatencyWindow& samples() const { return samples_; }
    // The last minute's worst and p95, for a tooltip.
    QString describe() const;

signals:
    void updated(); // about once a second, after describe() has changed

private:
    void tick();
    void logInterval();

    QTimer timer_;
    QElapsedTimer clock_;
    qint64 dueNs_ = 0;
    LatencyWindow samples_;
    int ticksSinceUpdate_ = 0;
    qint64 lastLogNs_ = 0;
};

} // namespace kvscope::ui
