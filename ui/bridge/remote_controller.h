#pragma once

#include <future>
#include <memory>
#include <vector>

#include <QObject>

#include "net/attach/remote_monitor.h"
#include "ui/bridge/remote_sample_metatype.h"

class QTimer;

namespace kvscope::ui {

// The window's link to a server: owns an attach::RemoteMonitor (whose
// threads do all the network work) and hands its samples to the UI thread
// as values, in sampleReady, at most ~10 a second (the newest wins; none is
// held back longer than that). Nothing here blocks the UI thread: a
// monitor being replaced or stopped is destroyed on a thread of its own.
class RemoteController : public QObject {
    Q_OBJECT
public:
    static constexpr int kMinIntervalMs = 100;

    explicit RemoteController(QObject* parent = nullptr);
    ~RemoteController() override;

    // Starts watching (stopping the link before, if any). The options are
    // taken as given: validate them first (attach::validate).
    void start(attach::ConnectOptions options);
    void stop();
    bool isActive() const { return monitor_ != nullptr; }

signals:
    void sampleReady(std::shared_ptr<const kvscope::attach::RemoteSample> sample);

private:
    // Where the monitor's thread leaves its newest sample for the UI thread.
    struct Mailbox;
    void collect();
    void deliver();
    void retire(std::unique_ptr<attach::RemoteMonitor> monitor);

    std::shared_ptr<Mailbox> mailbox_;
    std::unique_ptr<attach::RemoteMonitor> monitor_;
    std::shared_ptr<const attach::RemoteSample> pending_;
    QTimer* throttle_;
    std::vector<std::future<void>> retiring_; // monitors being destroyed off the UI thread
};

} // namespace kvscope::ui
