// The throughput plot on hand-made snapshot sequences, without a model: a
// burst, an idle gap between two bursts, a step longer than a second under
// load. It must draw what happened: tokens where steps ran, 0 where none did,
// and as many tokens under the curve as the engine made. And the experts'
// share of a mixture of experts' steps, in the figures and the CSV, absent
// for a dense model.
#include <QtTest>

#include <QBuffer>

#include <cmath>

#include "ui/dashboards/fragmentation_panel.h"
#include "ui/bridge/snapshot_metatype.h"
#include "ui/dashboards/throughput_panel.h"
#include "ui/dashboards/token_rate_spans.h"

using namespace kvscope;
using namespace kvscope::ui;

namespace {

// An engine's snapshot: its clock, time spent in steps and token totals.
struct Moment {
    double time_s, busy_s;
    std::uint64_t step, prompt, generated;
};

std::shared_ptr<const EngineSnapshot> snapshot(const Moment& m) {
    auto s = std::make_shared<EngineSnapshot>();
    s->time_s = m.time_s;
    s->busy_s = m.busy_s;
    s->step = m.step;
    s->prompt_tokens = m.prompt;
    s->generated_tokens = m.generated;
    return s;
}

// A step of `step_s` seconds, `expert_s` of them in experts (0: a dense model's).
std::shared_ptr<const EngineSnapshot> stepSnapshot(double time_s, std::uint64_t step, double step_s, double expert_s) {
    auto s = std::make_shared<EngineSnapshot>(*snapshot({time_s, time_s / 2, step, 20, step}));
    s->last_step_s = step_s;
    s->last_step_expert_s = expert_s;
    return s;
}

std::deque<SnapshotFigures> history(std::initializer_list<Moment> moments) {
    std::deque<SnapshotFigures> entries;
    for (const Moment& m : moments)
        entries.push_back(figures_of(*snapshot(m)));
    return entries;
}

// A chat turn of 40 ms at t = 3 s and another at t = 28 s, as the app
// publishes them: right after the first step of each, every 33 ms while
// busy, and once when the engine goes idle.
const std::initializer_list<Moment> kTwoTurns{
    {0.0, 0.0, 0, 0, 0},         {3.001, 0.001, 1, 20, 1},   {3.034, 0.033, 30, 20, 30},
    {3.040, 0.039, 36, 20, 36},  {28.001, 0.040, 37, 40, 37}, {28.040, 0.079, 73, 40, 73},
};

double tokensUnder(const std::vector<TokenRateSpan>& spans, double TokenRateSpan::*rate) {
    double tokens = 0;
    for (const TokenRateSpan& s : spans)
        tokens += s.*rate * (s.to_s - s.from_s);
    return tokens;
}

void verifyContiguous(const std::vector<TokenRateSpan>& spans, double from, double to) {
    QVERIFY(!spans.empty());
    QCOMPARE(spans.front().from_s, from);
    QCOMPARE(spans.back().to_s, to);
    for (std::size_t i = 1; i < spans.size(); ++i)
        QCOMPARE(spans[i].from_s, spans[i - 1].to_s);
}

} // namespace

class TestThroughputPlot : public QObject {
    Q_OBJECT
private slots:
    void initTestCase() { registerDashboardMetaTypes(); }
    void a_burst_is_drawn_where_it_ran();
    void an_idle_gap_reads_zero_between_bursts();
    void a_long_step_under_load_reads_its_rate();
    void steady_load_is_one_flat_line();
    void a_short_wait_is_part_of_the_work();
    void the_panel_plots_the_spans();
    void the_panel_plots_only_its_window();
    void dashboards_fit_the_dock_of_a_1024x700_window();
    void the_experts_share_of_a_step();
    void latencies_without_a_sample_read_as_a_dash();
    void the_csv_has_each_steps_expert_share();
};

void TestThroughputPlot::a_burst_is_drawn_where_it_ran() {
    // Idle 3 s, then 1 ms of prefill: the tokens go in that millisecond.
    const auto spans = token_rate_spans(history({{0.0, 0.0, 0, 0, 0}, {3.001, 0.001, 1, 20, 1}}));
    QCOMPARE(spans.size(), std::size_t{2});
    QCOMPARE(spans[0], (TokenRateSpan{0.0, 3.0, 0, 0}));
    QCOMPARE(spans[1].from_s, 3.0);
    QVERIFY(std::abs(spans[1].prompt_per_s - 20 / 0.001) < 1e-6);
    QVERIFY(std::abs(spans[1].generation_per_s - 1 / 0.001) < 1e-6);
}

void TestThroughputPlot::an_idle_gap_reads_zero_between_bursts() {
    const auto entries = history(kTwoTurns);
    const auto spans = token_rate_spans(entries);
    verifyContiguous(spans, 0.0, 28.040);
    // Nothing ran between 3.040 and 28.0: one span at 0 covers it, no slope.
    const auto gap = std::find_if(spans.begin(), spans.end(), [](const TokenRateSpan& s) { return s.from_s == 3.040; });
    QVERIFY(gap != spans.end());
    QVERIFY(std::abs(gap->to_s - 28.0) < 1e-9);
    QCOMPARE(gap->generation_per_s, 0.0);
    QCOMPARE(gap->prompt_per_s, 0.0);
    for (const TokenRateSpan& s : spans)
        if (s.to_s - s.from_s > 0.1)
            QCOMPARE(s.generation_per_s, 0.0); // only the bursts make tokens
    // The area under each curve is the tokens the engine made.
    QVERIFY(std::abs(tokensUnder(spans, &TokenRateSpan::generation_per_s) - 73) < 1e-6);
    QVERIFY(std::abs(tokensUnder(spans, &TokenRateSpan::prompt_per_s) - 40) < 1e-6);
}

void TestThroughputPlot::a_long_step_under_load_reads_its_rate() {
    // 47 sequences decode one token each in a 10 s step; the next snapshot
    // comes after it.
    const auto spans = token_rate_spans(history({{100.0, 99.9, 500, 9000, 2000}, {110.0, 109.9, 501, 9000, 2047}}));
    QCOMPARE(spans.size(), std::size_t{1});
    QCOMPARE(spans[0], (TokenRateSpan{100.0, 110.0, 0, 4.7}));
}

void TestThroughputPlot::steady_load_is_one_flat_line() {
    // Short waits between steps (publishing, the event loop) are part of the
    // work, not idle notches in the line.
    const auto spans = token_rate_spans(
        history({{1.0, 0.9, 10, 0, 100}, {1.033, 0.93, 20, 0, 200}, {1.066, 0.96, 30, 0, 300}}));
    QCOMPARE(spans.size(), std::size_t{2});
    for (const TokenRateSpan& s : spans)
        QVERIFY(std::abs(s.generation_per_s - 100 / 0.033) < 1e-6);
}

void TestThroughputPlot::a_short_wait_is_part_of_the_work() {
    // 20 ms of steps in 100 ms (the engine thread waited for a core): drawn
    // as 100 ms at the average rate, not as a spike after a notch.
    const auto spans = token_rate_spans(history({{5.0, 1.0, 100, 0, 1000}, {5.1, 1.02, 110, 0, 1010}}));
    QCOMPARE(spans.size(), std::size_t{1});
    QVERIFY(std::abs(spans[0].generation_per_s - 100) < 1e-9);
}

void TestThroughputPlot::the_panel_plots_the_spans() {
    ThroughputPanel panel;
    panel.setWindowSeconds(0);
    panel.show();
    for (const Moment& m : kTwoTurns)
        panel.setSnapshot(snapshot(m));
    const auto spans = token_rate_spans(panel.history()->entries());
    const auto gen = panel.series(ThroughputPanel::Series::GenerationTokensPerS);
    const auto prompt = panel.series(ThroughputPanel::Series::PromptTokensPerS);
    QCOMPARE(gen.size(), spans.size() + 1);
    for (std::size_t i = 0; i < spans.size(); ++i) {
        QCOMPARE(gen[i], spans[i].generation_per_s);
        QCOMPARE(prompt[i], spans[i].prompt_per_s);
    }
    QCOMPARE(gen.back(), spans.back().generation_per_s);
    QCOMPARE(panel.series(ThroughputPanel::Series::Running).size(), kTwoTurns.size());
}

void TestThroughputPlot::the_panel_plots_only_its_window() {
    ThroughputPanel panel;
    panel.setWindowSeconds(30);
    panel.show();
    panel.setSnapshot(snapshot({0.0, 0.0, 0, 0, 0}));
    panel.setSnapshot(snapshot({10.0, 1.0, 10, 0, 100}));
    panel.setSnapshot(snapshot({50.0, 1.0, 10, 0, 100}));
    panel.setSnapshot(snapshot({50.5, 1.5, 20, 0, 150}));
    // The window starts at 20.5 s: the interval from 10 s reaches into it
    // (idle, 0), the one before does not.
    const auto gen = panel.series(ThroughputPanel::Series::GenerationTokensPerS);
    QCOMPARE(gen, (std::vector<double>{0.0, 100.0, 100.0}));
}

void TestThroughputPlot::dashboards_fit_the_dock_of_a_1024x700_window() {
    // The bottom dock takes 2/5 of the window's height; its title and tabs
    // take ~60 px of that.
    const QSize dock(1024, 700 * 2 / 5 - 60);
    ThroughputPanel throughput;
    ThroughputPanel moe; // with its experts' plot
    moe.show();
    moe.setSnapshot(stepSnapshot(1.0, 1, 0.040, 0.0284));
    QVERIFY(moe.expertPlotShown());
    FragmentationPanel fragmentation;
    fragmentation.setCounterfactualVisible(true); // the longest legend
    for (QWidget* panel : std::initializer_list<QWidget*>{&throughput, &moe, &fragmentation}) {
        const QSize smallest = panel->minimumSizeHint();
        QVERIFY2(smallest.width() <= dock.width() && smallest.height() <= dock.height(),
                 qPrintable(QStringLiteral("%1: %2x%3")
                                .arg(panel->metaObject()->className())
                                .arg(smallest.width())
                                .arg(smallest.height())));
    }
}

void TestThroughputPlot::the_experts_share_of_a_step() {
    ThroughputPanel panel;
    panel.setWindowSeconds(0);
    panel.show();
    panel.setSnapshot(stepSnapshot(0.5, 0, 0.0, 0.0)); // before the first step: nothing says experts yet
    QVERIFY(!panel.expertPlotShown());
    QVERIFY(!panel.figuresText().contains(QStringLiteral("experts")));
    panel.setSnapshot(stepSnapshot(1.0, 1, 0.040, 0.0284));
    QVERIFY2(panel.figuresText().contains(QStringLiteral("last step 40.0 ms (experts 71%)")),
             qPrintable(panel.figuresText()));
    panel.setSnapshot(stepSnapshot(1.1, 2, 0.020, 0.0022));
    QVERIFY2(panel.figuresText().contains(QStringLiteral("last step 20.0 ms (experts 11%)")),
             qPrintable(panel.figuresText()));
    // Each snapshot's step as a point of the experts' plot, in %.
    QVERIFY(panel.expertPlotShown());
    const auto share = panel.series(ThroughputPanel::Series::ExpertShare);
    QCOMPARE(share.size(), std::size_t{3});
    QCOMPARE(share[0], 0.0);
    QVERIFY(std::abs(share[1] - 71.0) < 1e-9 && std::abs(share[2] - 11.0) < 1e-9);
    // A dense model's engine (its clock starts over): the step time alone, no plot.
    panel.setSnapshot(stepSnapshot(0.5, 1, 0.040, 0.0));
    QVERIFY2(panel.figuresText().contains(QStringLiteral("last step 40.0 ms   |")), qPrintable(panel.figuresText()));
    QVERIFY(!panel.figuresText().contains(QStringLiteral("experts")));
    QVERIFY(!panel.expertPlotShown());
}

// Percentiles are 0 until the first sample: no request has had its first
// token yet, so the figures say "—", not "0.0 ms"; the first sample shows.
void TestThroughputPlot::latencies_without_a_sample_read_as_a_dash() {
    ThroughputPanel panel;
    panel.setWindowSeconds(0);
    panel.show();
    panel.setSnapshot(stepSnapshot(0.5, 0, 0.0, 0.0));
    const QString none = panel.figuresText();
    QVERIFY2(none.contains(QStringLiteral("p50 \u2014 \u00b7 p95 \u2014   |   inter-token p50 \u2014 \u00b7 p95 \u2014")),
             qPrintable(none));
    QVERIFY2(!none.contains(QStringLiteral("0.0 ms")), qPrintable(none));
    auto sampled = std::make_shared<EngineSnapshot>(*stepSnapshot(1.0, 1, 0.040, 0.0));
    sampled->ttft.p50_ms = 12.5;
    sampled->ttft.p95_ms = 30.0;
    panel.setSnapshot(sampled);
    QVERIFY2(panel.figuresText().contains(QStringLiteral("p50 12.5 ms \u00b7 p95 30.0 ms   |   inter-token p50 \u2014")),
             qPrintable(panel.figuresText()));
}

void TestThroughputPlot::the_csv_has_each_steps_expert_share() {
    SnapshotHistory history;
    history.record(*stepSnapshot(0.0, 0, 0.0, 0.0)); // before the first step
    history.record(*stepSnapshot(1.0, 1, 0.040, 0.0284));
    history.record(*stepSnapshot(2.0, 2, 0.020, 0.0022));
    QBuffer buffer;
    QVERIFY(buffer.open(QIODevice::ReadWrite));
    QVERIFY(history.writeCsv(buffer));
    const QList<QByteArray> lines = buffer.data().trimmed().split('\n');
    QCOMPARE(lines.size(), 4);
    const QList<QByteArray> header = lines[0].split(',');
    const qsizetype seconds = header.indexOf("last_step_expert_s"), share = header.indexOf("last_step_expert_pct");
    QVERIFY(seconds >= 0 && share >= 0);
    const double expectedShare[] = {0.0, 71.0, 11.0};
    const double expectedSeconds[] = {0.0, 0.0284, 0.0022};
    for (int i = 0; i < 3; ++i) {
        const QList<QByteArray> row = lines[i + 1].split(',');
        QCOMPARE(row[seconds].toDouble(), expectedSeconds[i]);
        QVERIFY2(std::abs(row[share].toDouble() - expectedShare[i]) < 1e-3, row[share].constData());
    }
}

QTEST_MAIN(TestThroughputPlot)
#include "test_throughput_plot.moc"
