#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <thread>

#include <QMetaType>
#include <QObject>
#include <QString>

#include "net/hub/hub_error.h"

namespace kvscope::ui {

// How far a download has come, as net/hub's progress callback tells it
// (one file of a split model's `count` at a time).
struct DownloadProgress {
    QString file;               // the path in the repository
    int index = 1;              // from 1
    int count = 1;
    std::uint64_t done = 0;     // bytes of this file on disk, resumed ones included
    std::uint64_t total = 0;    // this file's bytes; 0 while unknown
    double bytesPerSecond = 0;  // this transfer's rate (0 until known)
    double secondsLeft = -1;    // at that rate; -1 while unknown
};

// A model fetched from the Hugging Face Hub (net/hub's resolve_model: from
// the cache when it is there, else downloaded, resumed and checked) on a
// worker thread of its own, with the hub settings the environment gives
// (HF_ENDPOINT, HF_TOKEN, LLAMA_CACHE, ...: net/hub/hub_settings.h). Its
// signals come on the thread that owns it; exactly one of finished, failed
// or cancelled ends each download.
class ModelDownloader : public QObject {
    Q_OBJECT
public:
    explicit ModelDownloader(QObject* parent = nullptr);
    // Cancels a download under way and waits for its thread (the partial
    // file stays for a resume): until the next progress report (about a
    // second) while bytes come, longer while a hub API call waits on an
    // unresponsive network (net/hub's connect and stall timeouts).
    ~ModelDownloader() override;

    // Starts fetching `reference`: ORG/NAME[:QUANT] or hf://ORG/NAME[:QUANT].
    // Precondition: !isRunning(). A reference that does not parse fails
    // (BadReference) through `failed`, as every other failure does.
    void start(const QString& reference);
    // Asks the download to stop; `cancelled` follows when it has.
    void cancel();
    bool isRunning() const { return running_; }

signals:
    void progress(const kvscope::ui::DownloadProgress& progress);
    void finished(const QString& path); // the model's first file, in the cache
    // The HubError's kind and message; any other failure (no cache folder
    // can be named, a file system error) comes as Http with its message.
    void failed(kvscope::hub::HubErrorKind kind, const QString& message);
    void cancelled();

private:
    void run(const std::string& reference, const std::shared_ptr<std::atomic<bool>>& stop);
    void ended();

    std::thread worker_;
    std::shared_ptr<std::atomic<bool>> stop_; // the running download's cancel flag
    bool running_ = false;
};

} // namespace kvscope::ui

Q_DECLARE_METATYPE(kvscope::ui::DownloadProgress)
Q_DECLARE_METATYPE(kvscope::hub::HubErrorKind)
