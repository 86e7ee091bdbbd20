#include "ui/dashboards/accuracy_measurement.h"

#include <exception>

#include <QFile>
#include <QFileInfo>
#include <QThread>

#include "engine/core/error.h"
#include "engine/tokenizer/tokenizer.h"
#include "engine/tokenizer/vocabulary.h"
#include "ui/bridge/background_priority.h"

namespace kvscope::ui {
namespace {

// QFile, so that the built-in sample (a Qt resource) reads like any file.
std::string readText(const QString& path) {
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly))
        throw Error("cannot read the text file " + path.toStdString() + ": " + file.errorString().toStdString());
    return file.readAll().toStdString();
}

QString dtypeName(KvDtype d) {
    const std::string_view name = to_string(d);
    return QString::fromUtf8(name.data(), static_cast<qsizetype>(name.size()));
}

} // namespace

std::vector<AccuracyRow> accuracy_rows(const KvAccuracyReport& report) {
    std::vector<AccuracyRow> rows;
    for (const KvAccuracyRow& r : report.rows)
        rows.push_back({dtypeName(r.kv_dtype), r.bytes_per_token, r.perplexity, r.delta_pct, r.kld, r.top1_agreement});
    return rows;
}

AccuracyMeasurement::AccuracyMeasurement(QObject* parent) : QObject(parent) {}

AccuracyMeasurement::~AccuracyMeasurement() {
    if (thread_) {
        cancel();
        thread_->wait();
        delete thread_;
    }
}

void AccuracyMeasurement::cancel() {
    if (cancelled_)
        cancelled_->store(true);
}

void AccuracyMeasurement::start(std::shared_ptr<const Model> model, const QString& textFile, std::uint32_t context,
                                std::uint32_t blockSize) {
    if (thread_ || !model)
        return;
    cancelled_ = std::make_shared<std::atomic<bool>>(false);
    auto cancelled = cancelled_;
    // Results travel back as queued calls into this object's thread. The
    // destructor waits for the worker, so `self` outlives every post.
    AccuracyMeasurement* self = this;
    auto post = [self](auto call) {
        QMetaObject::invokeMethod(self, [self, call] { call(self); }, Qt::QueuedConnection);
    };
    thread_ = QThread::create([model, textFile, context, blockSize, cancelled, post] {
        lowerCurrentThreadPriority();
        try {
            const Tokenizer tokenizer(read_vocabulary(model->file()));
            const std::vector<TokenId> tokens = tokenizer.encode(readText(textFile)); // BOS as the model asks
            KvAccuracyOptions options;
            options.kv_dtypes = runnable_kv_dtypes(*model, options.backend);
            options.block_size = blockSize;
            options.context = context;
            options.cancel = cancelled.get();
            options.on_window = [post](std::size_t done, std::size_t total) {
                post([done = static_cast<int>(done), total = static_cast<int>(total)](AccuracyMeasurement* m) {
                    emit m->progress(done, total);
                });
            };
            const KvAccuracyReport report = measure_kv_accuracy(*model, tokens, options);
            const QString note = QObject::tr("%1: %2 tokens, %3 scored in %4 window(s) of %5 tokens, each KV dtype "
                                             "against f32 KV.")
                                     .arg(QFileInfo(textFile).fileName())
                                     .arg(report.tokens)
                                     .arg(report.scored)
                                     .arg(report.windows)
                                     .arg(report.context);
            post([rows = accuracy_rows(report), note](AccuracyMeasurement* m) { emit m->finished(rows, note); });
        } catch (const KvAccuracyCancelled&) {
            // Asked for: stopped() says it is over.
        } catch (const std::exception& e) {
            post([message = QString::fromStdString(e.what())](AccuracyMeasurement* m) { emit m->failed(message); });
        }
    });
    connect(thread_, &QThread::finished, this, &AccuracyMeasurement::done);
    thread_->start();
}

void AccuracyMeasurement::done() {
    thread_->deleteLater();
    thread_ = nullptr;
    emit stopped();
}

} // namespace kvscope::ui
