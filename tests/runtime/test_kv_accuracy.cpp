// What each KV dtype costs in accuracy on stories260K and a fixed text
// (tests/data/tiny_story.txt): the perplexity targets, and the f32
// baseline checked against perplexity computed here from the plain
// teacher-forcing path (teacher_forcing.h); progress per window and cancel.
#include <QtTest>

#include <QFile>

#include <atomic>
#include <cmath>
#include <map>
#include <string>
#include <utility>

#include "engine/core/error.h"
#include "engine/runtime/teacher_forcing.h"
#include "engine/runtime/kv_accuracy.h"
#include "engine/tokenizer/tokenizer.h"
#include "support/test_models.h"

using namespace kvscope;
using namespace kvscope::test;

namespace {

std::vector<TokenId> story_tokens(const Model& model) {
    QFile f(QStringLiteral(KVSCOPE_TEST_DATA "/tiny_story.txt"));
    if (!f.open(QIODevice::ReadOnly))
        throw Error("cannot read the test text");
    const QByteArray text = f.readAll();
    return Tokenizer(read_vocabulary(model.file())).encode(std::string_view(text.constData(), text.size()));
}

const KvAccuracyRow* row_named(const KvAccuracyReport& r, std::string_view name) {
    for (const KvAccuracyRow& row : r.rows)
        if (to_string(row.kv_dtype) == name)
            return &row;
    return nullptr;
}

// Perplexity from teacher_forced_logits, with its own log-sum-exp in double.
double reference_perplexity(const Model& model, std::span<const TokenId> tokens) {
    const std::vector<float> logits = teacher_forced_logits(model, tokens, KvDtype::F32);
    const std::size_t vocab = logits.size() / tokens.size();
    double nll = 0;
    for (std::size_t p = 0; p + 1 < tokens.size(); ++p) {
        const float* row = logits.data() + p * vocab;
        double max = row[0];
        for (std::size_t i = 1; i < vocab; ++i)
            max = std::max(max, double(row[i]));
        double sum = 0;
        for (std::size_t i = 0; i < vocab; ++i)
            sum += std::exp(double(row[i]) - max);
        nll += max + std::log(sum) - double(row[tokens[p + 1]]);
    }
    return std::exp(nll / double(tokens.size() - 1));
}

} // namespace

class TestKvAccuracy : public QObject {
    Q_OBJECT
private slots:
    void initTestCase();
    void f32_baseline_matches_plain_teacher_forcing();
    void every_runnable_dtype_meets_its_target();
    void windows_restart_the_cache();
    void progress_is_reported_per_window();
    void cancel_stops_within_a_window();
    void bad_requests_are_errors();

private:
    std::unique_ptr<Model> model_;
    std::vector<TokenId> tokens_;
};

void TestKvAccuracy::initTestCase() {
    KVSCOPE_REQUIRE_MODEL(path, "stories260K-f32.gguf");
    model_ = std::make_unique<Model>(path.toStdString());
    tokens_ = story_tokens(*model_);
    QVERIFY(tokens_.size() > 300);
}

void TestKvAccuracy::f32_baseline_matches_plain_teacher_forcing() {
    const std::span<const TokenId> head = std::span(tokens_).first(200);
    KvAccuracyOptions o;
    o.kv_dtypes = {KvDtype::F32}; // named again: still one row
    const KvAccuracyReport r = measure_kv_accuracy(*model_, head, o);
    QCOMPARE(r.rows.size(), std::size_t{1});
    QCOMPARE(r.scored, head.size() - 1);
    QCOMPARE(r.windows, std::size_t{1});
    const KvAccuracyRow& f32 = r.rows[0];
    QCOMPARE(f32.kv_dtype, KvDtype::F32);
    QCOMPARE(f32.delta_pct, 0.0);
    QCOMPARE(f32.kld, 0.0);
    QCOMPARE(f32.top1_agreement, 1.0);
    const double expected = reference_perplexity(*model_, head);
    QVERIFY2(std::abs(f32.perplexity / expected - 1) < 1e-9,
             qPrintable(QStringLiteral("%1 vs %2").arg(f32.perplexity).arg(expected)));
    // A trained model on its own kind of text: far better than the 512-token
    // vocabulary's uniform guess.
    QVERIFY(f32.perplexity > 1 && f32.perplexity < 20);
}

void TestKvAccuracy::every_runnable_dtype_meets_its_target() {
    // The perplexity targets (delta against f32 KV, percent). A dtype
    // this build cannot run yet is simply not in the report.
    const std::map<std::string, double, std::less<>> max_delta_pct{
        {"f16", 0.1}, {"int8", 1.0}, {"fp8-e4m3", 3.0}, {"int4-kivi", 5.0}};
    KvAccuracyOptions o;
    o.kv_dtypes = runnable_kv_dtypes(*model_, o.backend);
    QVERIFY(o.kv_dtypes.size() >= 2); // f32 and f16 always run
    const KvAccuracyReport r = measure_kv_accuracy(*model_, tokens_, o);
    QCOMPARE(r.rows.size(), o.kv_dtypes.size());
    QCOMPARE(r.scored, tokens_.size() - 1);
    for (const KvAccuracyRow& row : r.rows) {
        const std::string name(to_string(row.kv_dtype));
        qInfo("%-10s %6.1f B/token %5.2fx  ppl %.4f  delta %+.3f%%  KLD %.6f  top-1 %.2f%%", name.c_str(),
              row.bytes_per_token, row.saving_vs_f16, row.perplexity, row.delta_pct, row.kld,
              100 * row.top1_agreement);
        QVERIFY2(std::isfinite(row.perplexity) && row.kld >= 0 && row.top1_agreement > 0.5, name.c_str());
        if (const auto it = max_delta_pct.find(name); it != max_delta_pct.end())
            QVERIFY2(std::abs(row.delta_pct) <= it->second,
                     qPrintable(QStringLiteral("%1: %2% > %3%").arg(name.c_str()).arg(row.delta_pct).arg(it->second)));
    }
    const KvAccuracyRow* f32 = row_named(r, "f32");
    const KvAccuracyRow* f16 = row_named(r, "f16");
    QVERIFY(f32 && f16);
    QCOMPARE(f32->bytes_per_token, 2 * f16->bytes_per_token);
    QCOMPARE(f16->bytes_per_token, 640.0); // 5 layers x 4 KV heads x 8 dims x K,V x 2 bytes
    QCOMPARE(f16->saving_vs_f16, 1.0);
    QVERIFY(f16->kld < 1e-4);
    // KIVI's per-channel keys must beat plain per-token int4 on the same cache.
    const KvAccuracyRow* kivi = row_named(r, "int4-kivi");
    const KvAccuracyRow* int4 = row_named(r, "int4");
    if (kivi && int4) {
        QVERIFY2(std::abs(kivi->delta_pct) < std::abs(int4->delta_pct),
                 qPrintable(QStringLiteral("int4-kivi %1% vs int4 %2%").arg(kivi->delta_pct).arg(int4->delta_pct)));
        QVERIFY(kivi->kld < int4->kld);
    }
}

void TestKvAccuracy::windows_restart_the_cache() {
    // The same text in 32-token windows: every token still scored once, but
    // each prediction sees at most 31 earlier tokens, so the model does
    // worse than with the whole story in view.
    const std::span<const TokenId> head = std::span(tokens_).first(160);
    KvAccuracyOptions whole, windowed;
    windowed.context = 32;
    const KvAccuracyReport a = measure_kv_accuracy(*model_, head, whole);
    const KvAccuracyReport b = measure_kv_accuracy(*model_, head, windowed);
    QCOMPARE(a.windows, std::size_t{1});
    QCOMPARE(b.windows, std::size_t{6}); // ceil(159 / 31)
    QCOMPARE(b.scored, a.scored);
    QVERIFY2(b.rows[0].perplexity > a.rows[0].perplexity,
             qPrintable(QStringLiteral("%1 vs %2").arg(b.rows[0].perplexity).arg(a.rows[0].perplexity)));
}

void TestKvAccuracy::progress_is_reported_per_window() {
    const std::span<const TokenId> head = std::span(tokens_).first(160);
    KvAccuracyOptions o;
    o.kv_dtypes = {KvDtype::F16};
    o.context = 32;
    std::vector<std::pair<std::size_t, std::size_t>> calls;
    o.on_window = [&](std::size_t done, std::size_t total) { calls.emplace_back(done, total); };
    const KvAccuracyReport r = measure_kv_accuracy(*model_, head, o);
    QCOMPARE(calls.size(), r.windows);
    for (std::size_t i = 0; i < calls.size(); ++i) {
        QCOMPARE(calls[i].first, i + 1);
        QCOMPARE(calls[i].second, std::size_t{6});
    }
}

void TestKvAccuracy::cancel_stops_within_a_window() {
    const std::span<const TokenId> head = std::span(tokens_).first(160);
    std::atomic<bool> cancel{false};
    KvAccuracyOptions o;
    o.context = 32;
    o.cancel = &cancel;
    std::size_t windows_done = 0;
    o.on_window = [&](std::size_t done, std::size_t) {
        windows_done = done;
        if (done == 2)
            cancel = true; // as another thread would: seen at the next position
    };
    QVERIFY_THROWS_EXCEPTION(KvAccuracyCancelled, measure_kv_accuracy(*model_, head, o));
    QCOMPARE(windows_done, std::size_t{2});
    // Already set when it starts: no window is reported.
    windows_done = 0;
    QVERIFY_THROWS_EXCEPTION(KvAccuracyCancelled, measure_kv_accuracy(*model_, head, o));
    QCOMPARE(windows_done, std::size_t{0});
}

void TestKvAccuracy::bad_requests_are_errors() {
    KvAccuracyOptions o;
    const std::vector<TokenId> one{1};
    QVERIFY_THROWS_EXCEPTION(Error, measure_kv_accuracy(*model_, one, o));
    o.context = 513; // stories260K's context is 512
    QVERIFY_THROWS_EXCEPTION(Error, measure_kv_accuracy(*model_, tokens_, o));
    o.context = 0;
    const std::vector<TokenId> outside{1, 600, 2};
    QVERIFY_THROWS_EXCEPTION(Error, measure_kv_accuracy(*model_, outside, o));
}

QTEST_GUILESS_MAIN(TestKvAccuracy)
#include "test_kv_accuracy.moc"
