#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include <QObject>
#include <QString>

#include "engine/runtime/kv_accuracy.h"

class QThread;

namespace kvscope::ui {

// One row of the accuracy table, as KvQuantPanel shows it.
struct AccuracyRow {
    QString dtype;
    double bytes_per_token = 0;
    double perplexity = 0;
    double delta_pct = 0;      // perplexity change against f32 KV, percent
    double kld = 0;            // mean KL divergence from f32 KV, nats
    double top1_agreement = 0; // share of positions ranking the same token first
};

std::vector<AccuracyRow> accuracy_rows(const KvAccuracyReport& report);

// measure_kv_accuracy's report over all windows from its reports on each
// window alone (same dtypes, each run with context = its window's length):
// perplexities combine through their summed log-likelihoods, KL divergence
// and top-1 agreement as means over the scored positions; bytes per token
// are the longest (first) window's, as measure_kv_accuracy counts them.
// Measuring window by window is what lets the app report progress.
KvAccuracyReport combine_window_reports(const std::vector<KvAccuracyReport>& windows, std::size_t tokens);

// Runs the KV accuracy measurement (engine/runtime/kv_accuracy.h) of a text
// file on a worker thread, window by window, so that the UI thread never
// waits and can show progress. The model is shared read-only with the
// engine; the measurement builds its own KV caches.
class AccuracyMeasurement : public QObject {
    Q_OBJECT
public:
    explicit AccuracyMeasurement(QObject* parent = nullptr);
    // Cancels a running measurement and waits for its current window.
    ~AccuracyMeasurement() override;

    bool isRunning() const { return thread_ != nullptr; }

    // Tokenizes the file with the model's vocabulary and scores every KV
    // dtype the forward pass can run, in windows of `context` tokens (0: the
    // model's context). Ignored while a measurement runs.
    void start(std::shared_ptr<const Model> model, const QString& textFile, std::uint32_t context,
               std::uint32_t blockSize = 16);
    void cancel();

signals:
    void progress(int windowsDone, int windows);
    void finished(const std::vector<kvscope::ui::AccuracyRow>& rows, const QString& note);
    void failed(const QString& message);
    void stopped(); // after finished, failed or a cancel: isRunning() is false again

private:
    void done();

    QThread* thread_ = nullptr;
    std::shared_ptr<std::atomic<bool>> cancelled_;
};

} // namespace kvscope::ui
