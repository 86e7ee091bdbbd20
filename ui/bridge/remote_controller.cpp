#include "ui/bridge/remote_controller.h"

#include <mutex>

#include <QTimer>

namespace kvscope::ui {

// Shared by the controller and the monitor's callback, so that a callback
// running while the controller stops (or is destroyed) finds it closed
// rather than a dangling controller.
struct RemoteController::Mailbox {
    std::mutex mutex;
    RemoteController* owner = nullptr; // null once closed
    std::shared_ptr<const attach::RemoteSample> newest;
    bool posted = false; // a collect() is queued on the UI thread

    void put(std::shared_ptr<const attach::RemoteSample> sample) {
        const std::lock_guard lock(mutex);
        if (!owner)
            return;
        newest = std::move(sample);
        if (posted)
            return; // the queued collect() will take this newer one
        posted = true;
        QMetaObject::invokeMethod(owner, &RemoteController::collect, Qt::QueuedConnection);
    }
    std::shared_ptr<const attach::RemoteSample> take() {
        const std::lock_guard lock(mutex);
        posted = false;
        return std::move(newest);
    }
    void close() {
        const std::lock_guard lock(mutex);
        owner = nullptr;
    }
};

RemoteController::RemoteController(QObject* parent) : QObject(parent), throttle_(new QTimer(this)) {
    qRegisterMetaType<std::shared_ptr<const attach::RemoteSample>>();
    throttle_->setSingleShot(true);
    throttle_->setInterval(kMinIntervalMs);
    connect(throttle_, &QTimer::timeout, this, &RemoteController::deliver);
}

RemoteController::~RemoteController() {
    stop();
    // retiring_'s futures wait here for the monitors' threads to end.
}

void RemoteController::start(attach::ConnectOptions options) {
    stop();
    mailbox_ = std::make_shared<Mailbox>();
    mailbox_->owner = this;
    monitor_ = std::make_unique<attach::RemoteMonitor>(
        std::move(options), [mailbox = mailbox_](std::shared_ptr<const attach::RemoteSample> sample) {
            mailbox->put(std::move(sample));
        });
}

void RemoteController::stop() {
    if (mailbox_)
        mailbox_->close();
    mailbox_.reset();
    pending_.reset();
    throttle_->stop();
    if (monitor_)
        retire(std::move(monitor_));
}

// The monitor's destructor joins its threads (up to about a second): off
// the UI thread. Finished retirements are dropped as new ones come.
void RemoteController::retire(std::unique_ptr<attach::RemoteMonitor> monitor) {
    std::erase_if(retiring_, [](const std::future<void>& f) {
        return f.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
    });
    retiring_.push_back(std::async(std::launch::async, [m = std::move(monitor)]() mutable { m.reset(); }));
}

void RemoteController::collect() {
    if (!mailbox_)
        return;
    if (auto sample = mailbox_->take())
        pending_ = std::move(sample);
    if (!throttle_->isActive())
        deliver();
}

void RemoteController::deliver() {
    if (!pending_)
        return;
    emit sampleReady(std::move(pending_));
    pending_.reset();
    throttle_->start(); // the next one waits at least kMinIntervalMs
}

} // namespace kvscope::ui
