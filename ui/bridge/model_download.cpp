#include "ui/bridge/model_download.h"

#include <QMetaObject>

#include "net/hub/hub_client.h"
#include "net/hub/hub_reference.h"
#include "net/hub/hub_settings.h"
#include "ui/bridge/background_priority.h"

namespace kvscope::ui {
namespace {

hub::HubReference referenceOf(const std::string& text) {
    if (auto ref = hub::hub_reference_of_path(text))
        return *ref;
    return hub::parse_hub_reference(text);
}

DownloadProgress progressOf(const hub::FileProgress& p) {
    const hub::TransferProgress& t = p.transfer;
    DownloadProgress d{QString::fromStdString(p.file), p.index, p.count, t.done, t.total};
    if (t.seconds > 0 && t.done > t.resumed_from)
        d.bytesPerSecond = static_cast<double>(t.done - t.resumed_from) / t.seconds;
    if (d.bytesPerSecond > 0 && t.total >= t.done)
        d.secondsLeft = static_cast<double>(t.total - t.done) / d.bytesPerSecond;
    return d;
}

} // namespace

ModelDownloader::ModelDownloader(QObject* parent) : QObject(parent) {
    qRegisterMetaType<DownloadProgress>();
    qRegisterMetaType<hub::HubErrorKind>();
}

ModelDownloader::~ModelDownloader() {
    cancel();
    if (worker_.joinable())
        worker_.join();
}

void ModelDownloader::start(const QString& reference) {
    Q_ASSERT(!running_);
    if (worker_.joinable())
        worker_.join(); // the last download's thread, which has ended (running_ is false)
    stop_ = std::make_shared<std::atomic<bool>>(false);
    running_ = true;
    worker_ = std::thread(&ModelDownloader::run, this, reference.trimmed().toStdString(), stop_);
}

void ModelDownloader::cancel() {
    if (stop_)
        *stop_ = true;
}

// On the worker thread. Each outcome is posted to the owner's thread; the
// destructor joins this thread first, so `this` outlives every post.
void ModelDownloader::run(const std::string& reference, const std::shared_ptr<std::atomic<bool>>& stop) {
    lowerCurrentThreadPriority();
    const auto post = [this](auto&& f) {
        QMetaObject::invokeMethod(this, std::forward<decltype(f)>(f), Qt::QueuedConnection);
    };
    try {
        const hub::CachedModel model =
            hub::resolve_model(referenceOf(reference), hub::hub_settings_from_environment(),
                               [&](const hub::FileProgress& p) {
                                   post([this, d = progressOf(p)] { emit progress(d); });
                                   return !*stop;
                               });
        post([this, path = QString::fromStdString(model.first().string())] {
            ended();
            emit finished(path);
        });
    } catch (const hub::HubError& e) {
        post([this, kind = e.kind(), message = QString::fromUtf8(e.what())] {
            ended();
            if (kind == hub::HubErrorKind::Cancelled)
                emit cancelled();
            else
                emit failed(kind, message);
        });
    } catch (const std::exception& e) { // the cache folder unknown (no HOME), a file system error
        post([this, message = QString::fromUtf8(e.what())] {
            ended();
            emit failed(hub::HubErrorKind::Http, message);
        });
    }
}

void ModelDownloader::ended() {
    running_ = false;
    stop_.reset();
}

} // namespace kvscope::ui
