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

// Runs the KV accuracy measurement (engine/runtime/kv_accuracy.h) of a text
// file on a worker thread, so that the UI thread never waits; the engine
// reports each evaluation window as progress and polls the cancel flag.
// The model is shared read-only with the engine; the measurement builds
// its own KV caches.
class AccuracyMeasurement : public QObject {
    Q_OBJECT
public:
    explicit AccuracyMeasurement(QObject* parent = nullptr);
    // Cancels a running measurement and waits for it to stop (within a position).
    ~AccuracyMeasurement() override;

    bool isRunning() const { return thread_ != nullptr; }

    // The built-in sample text (resources/sample_text.txt, compiled in).
    static QString sampleText() { return QStringLiteral(":/kvscope/sample_text.txt"); }

    // Tokenizes the file (a path or a Qt resource) with the model's
    // vocabulary and scores every KV dtype the forward pass can run, in
    // windows of `context` tokens (0: the model's context). Ignored while a
    // measurement runs.
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
