#include "ui/dashboards/accuracy_measurement.h"

#include <cmath>
#include <exception>
#include <fstream>
#include <sstream>

#include <QFileInfo>
#include <QThread>

#include "engine/core/error.h"
#include "engine/tokenizer/tokenizer.h"
#include "engine/tokenizer/vocabulary.h"

namespace kvscope::ui {
namespace {

std::string readText(const QString& path) {
    std::ifstream in(path.toStdString(), std::ios::binary);
    if (!in)
        throw Error("cannot read the text file " + path.toStdString());
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
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

KvAccuracyReport combine_window_reports(const std::vector<KvAccuracyReport>& windows, std::size_t tokens) {
    KvAccuracyReport all;
    if (windows.empty())
        return all;
    all.tokens = tokens;
    all.windows = windows.size();
    all.context = windows.front().context;
    all.rows = windows.front().rows; // dtypes, bytes per token and saving from the longest window
    for (std::size_t d = 0; d < all.rows.size(); ++d) {
        double nll = 0, kld = 0, top1 = 0;
        std::size_t scored = 0;
        for (const KvAccuracyReport& w : windows) {
            const KvAccuracyRow& r = w.rows.at(d);
            const double n = static_cast<double>(w.scored);
            nll += n * std::log(r.perplexity);
            kld += n * r.kld;
            top1 += n * r.top1_agreement;
            scored += w.scored;
        }
        const double n = static_cast<double>(scored);
        all.rows[d].perplexity = std::exp(nll / n);
        all.rows[d].kld = kld / n;
        all.rows[d].top1_agreement = top1 / n;
        all.scored = scored;
    }
    for (KvAccuracyRow& r : all.rows) // against f32, listed first
        r.delta_pct = 100.0 * (r.perplexity / all.rows.front().perplexity - 1.0);
    return all;
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
        try {
            const Tokenizer tokenizer(read_vocabulary(model->file()));
            const std::vector<TokenId> tokens = tokenizer.encode(readText(textFile)); // BOS as the model asks
            KvAccuracyOptions options;
            options.kv_dtypes = runnable_kv_dtypes(*model, options.backend);
            options.block_size = blockSize;
            options.context = context > 0 ? context : model->config().context_length;
            const auto windows = evaluation_windows(tokens, options.context);
            std::vector<KvAccuracyReport> reports;
            for (std::size_t i = 0; i < windows.size(); ++i) {
                if (cancelled->load())
                    return;
                KvAccuracyOptions one = options;
                one.context = static_cast<std::uint32_t>(windows[i].size());
                reports.push_back(measure_kv_accuracy(*model, windows[i], one));
                const int done = static_cast<int>(i + 1), total = static_cast<int>(windows.size());
                post([done, total](AccuracyMeasurement* m) { emit m->progress(done, total); });
            }
            const KvAccuracyReport report = combine_window_reports(reports, tokens.size());
            const QString note = QObject::tr("%1: %2 tokens, %3 scored in %4 window(s) of %5 tokens, each KV dtype "
                                             "against f32 KV.")
                                     .arg(QFileInfo(textFile).fileName())
                                     .arg(report.tokens)
                                     .arg(report.scored)
                                     .arg(report.windows)
                                     .arg(report.context);
            post([rows = accuracy_rows(report), note](AccuracyMeasurement* m) { emit m->finished(rows, note); });
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
