#include "ui/dashboards/throughput_panel.h"

#include <algorithm>

#include <QComboBox>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QShowEvent>
#include <QVBoxLayout>

#include "ui/dashboards/dashboard_plot.h"
#include "ui/dashboards/token_rate_spans.h"

namespace kvscope::ui {
namespace {

// A latency of 0 is the engine's "no sample yet" (Percentiles is 0 until the
// first one, and a real step or token takes time), shown as a dash, not "0.0 ms".
QString ms(double v) { return v > 0 ? QString::number(v, 'f', 1) + QStringLiteral(" ms") : QStringLiteral("\u2014"); }

// "12.3 ms", and for a mixture of experts "12.3 ms (experts 71%)": the
// share of the step its router and experts took. Nothing is added for a
// dense model, whose steps spend nothing in experts.
QString stepText(const EngineSnapshot& s) {
    QString text = ms(1000.0 * s.last_step_s);
    if (s.last_step_expert_s > 0)
        text += QObject::tr(" (experts %1%)")
                    .arg(100.0 * expert_share_of_step(s.last_step_s, s.last_step_expert_s), 0, 'f', 0);
    return text;
}

// What this TTFT measures (engine/serving_metrics.h, engine.cpp), against
// the connected view's, which is the server's own.
QString ttftToolTip() {
    return QObject::tr("TTFT (engine): measured by the engine itself, from a request's arrival in its queue to the "
                       "sampling of its first token; exact percentiles over every request since the engine started. "
                       "A server's own TTFT (the connected view's figures) is its /metrics histogram, from when it "
                       "received the request, over the last minute, so the two may differ.");
}

} // namespace

ThroughputPanel::ThroughputPanel(std::shared_ptr<SnapshotHistory> history, QWidget* parent)
    : QWidget(parent),
      history_(history ? std::move(history) : std::make_shared<SnapshotHistory>()),
      window_(new QComboBox(this)),
      tokensPlot_(newDashboardPlot(this, tr("time (s)"), tr("tokens/s"))),
      seqsPlot_(newDashboardPlot(this, tr("time (s)"), tr("sequences"))),
      kvPlot_(newDashboardPlot(this, tr("time (s)"), tr("% of KV pool"))),
      expertPlot_(newDashboardPlot(this, tr("time (s)"), tr("% of the step's time"))),
      figures_(new QLabel(this)),
      awayNote_(new QLabel(this)) {
    // Graph order follows the Series enum.
    addLine(tokensPlot_, tr("prompt"), QColor(0x8c, 0x56, 0x4b));
    addLine(tokensPlot_, tr("generation"), QColor(0x2c, 0xa0, 0x2c));
    addLine(seqsPlot_, tr("running"), QColor(0x2c, 0xa0, 0x2c));
    addLine(seqsPlot_, tr("waiting"), QColor(0x94, 0x67, 0xbd));
    addLine(seqsPlot_, tr("swapped"), QColor(0xd6, 0x27, 0x28));
    addLine(kvPlot_, tr("blocks in use"), QColor(0x1f, 0x77, 0xb4));
    addLine(kvPlot_, tr("slots holding a token"), QColor(0x17, 0xbe, 0xcf), Qt::DashLine);
    addLine(expertPlot_, tr("router and experts"), QColor(0xff, 0x7f, 0x0e));
    kvPlot_->yAxis->setRange(0, 105);
    expertPlot_->yAxis->setRange(0, 105);
    expertPlot_->setVisible(false); // until a step spends time in experts
    for (QCustomPlot* plot : allPlots())
        for (int i = 0; i < plot->graphCount(); ++i)
            plot->graph(i)->setLineStyle(QCPGraph::lsStepLeft); // each value holds until the next

    for (const auto& [label, seconds] : {std::pair{tr("last 30 s"), 30.0}, {tr("last 60 s"), 60.0},
                                          {tr("last 5 min"), 300.0}, {tr("all"), 0.0}})
        window_->addItem(label, seconds);
    window_->setCurrentIndex(1);
    connect(window_, &QComboBox::currentIndexChanged, this,
            [this](int index) { setWindowSeconds(window_->itemData(index).toDouble()); });
    figures_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    // Its text changes width at every snapshot: left to set the panel's
    // minimum width, it would resize the panel and its three plots each time.
    figures_->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
    figures_->setWordWrap(true); // a narrow dock wraps it rather than scroll

    auto* top = new QHBoxLayout;
    top->addWidget(figures_, 1);
    top->addWidget(new QLabel(tr("Window:"), this));
    top->addWidget(window_);
    // Side by side: the bottom dock is wide and short.
    auto* plots = new QHBoxLayout;
    for (QCustomPlot* plot : allPlots())
        plots->addWidget(plot, 1);
    awayNote_->setWordWrap(true);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 4, 4, 4);
    layout->addWidget(awayNote_);
    layout->addLayout(top);
    layout->addLayout(plots, 1);
    clear();
}

std::array<QCustomPlot*, 4> ThroughputPanel::allPlots() const { return {tokensPlot_, seqsPlot_, kvPlot_, expertPlot_}; }

QCPGraph* ThroughputPanel::graph(Series s) const {
    switch (s) {
    case Series::PromptTokensPerS: return tokensPlot_->graph(0);
    case Series::GenerationTokensPerS: return tokensPlot_->graph(1);
    case Series::Running: return seqsPlot_->graph(0);
    case Series::Waiting: return seqsPlot_->graph(1);
    case Series::Swapped: return seqsPlot_->graph(2);
    case Series::BlockOccupancy: return kvPlot_->graph(0);
    case Series::TokenOccupancy: return kvPlot_->graph(1);
    case Series::ExpertShare: return expertPlot_->graph(0);
    }
    return nullptr;
}

void ThroughputPanel::setWindowSeconds(double seconds) {
    window_s_ = std::max(0.0, seconds);
    const int index = window_->findData(window_s_);
    if (index >= 0 && index != window_->currentIndex())
        window_->setCurrentIndex(index);
    updatePlots();
}

void ThroughputPanel::setSnapshot(std::shared_ptr<const EngineSnapshot> snapshot) {
    if (!snapshot)
        return;
    history_->record(*snapshot);
    latest_ = std::move(snapshot);
    if (!isVisible()) {
        stale_ = true;
        return;
    }
    updatePlots();
    updateFigures(*latest_);
}

void ThroughputPanel::clear() {
    latest_.reset();
    stale_ = false;
    for (QCustomPlot* plot : allPlots()) {
        for (int i = 0; i < plot->graphCount(); ++i)
            plot->graph(i)->data()->clear();
        queueReplot(plot);
    }
    expertPlot_->setVisible(false);
    figures_->setText(tr("No snapshot yet"));
    figures_->setToolTip(ttftToolTip());
    setStale({});
}

void ThroughputPanel::setStale(const QString& note) {
    awayNote_->setText(note);
    awayNote_->setVisible(!note.isEmpty());
    figures_->setEnabled(note.isEmpty()); // the palette's dimmed text: not live figures
}

bool ThroughputPanel::figuresGreyed() const { return !figures_->isEnabled(); }

void ThroughputPanel::showEvent(QShowEvent* event) {
    QWidget::showEvent(event);
    if (!stale_)
        return;
    stale_ = false;
    updatePlots();
    updateFigures(*latest_);
}

// Rates are drawn as steps of constant height over the spans that made the
// tokens (token_rate_spans.h); counts hold from one snapshot to the next, as
// the engine's state does between steps.
void ThroughputPanel::updatePlots() {
    const auto& entries = history_->entries();
    if (entries.empty())
        return;
    const double last = entries.back().time_s;
    const double from = window_s_ > 0 ? last - window_s_ : entries.front().time_s;
    // Entries are in time order: only the window's tail is copied, from the
    // entry before it, whose interval reaches into the window.
    const auto inWindow = std::lower_bound(entries.begin(), entries.end(), from,
                                           [](const SnapshotFigures& f, double t) { return f.time_s < t; });
    const auto first = static_cast<std::size_t>(std::max<std::ptrdiff_t>(inWindow - entries.begin() - 1, 0));
    updateRatePlot(token_rate_spans(entries, first));
    QVector<double> t, running, waiting, swapped, blocks, tokens, experts;
    for (std::size_t i = first; i < entries.size(); ++i) {
        const SnapshotFigures& f = entries[i];
        t << f.time_s;
        running << static_cast<double>(f.running);
        waiting << static_cast<double>(f.waiting);
        swapped << static_cast<double>(f.swapped);
        blocks << 100.0 * f.block_occupancy;
        tokens << 100.0 * f.token_occupancy;
        experts << 100.0 * expert_share_of_step(f.last_step_s, f.last_step_expert_s);
    }
    graph(Series::Running)->setData(t, running, true);
    graph(Series::Waiting)->setData(t, waiting, true);
    graph(Series::Swapped)->setData(t, swapped, true);
    graph(Series::BlockOccupancy)->setData(t, blocks, true);
    graph(Series::TokenOccupancy)->setData(t, tokens, true);
    graph(Series::ExpertShare)->setData(t, experts, true);
    expertPlot_->setVisible(history_->hasExpertSteps());
    const double start = window_s_ > 0 ? std::max(from, 0.0) : t.front();
    for (QCustomPlot* plot : allPlots())
        plot->xAxis->setRange(start, std::max(last, start + 1));
    double topSeqs = 1;
    for (const QVector<double>* v : {&running, &waiting, &swapped})
        topSeqs = std::max(topSeqs, *std::max_element(v->begin(), v->end()));
    seqsPlot_->yAxis->setRange(0, topSeqs * 1.1 + 0.5);
    for (QCustomPlot* plot : allPlots())
        if (plot->isVisibleTo(this))
            queueReplot(plot);
}

// Each span is one point at its start; a last point at the end of the last
// span closes it (the graphs draw steps left to right).
void ThroughputPanel::updateRatePlot(const std::vector<TokenRateSpan>& spans) {
    QVector<double> t, prompt, gen;
    for (const TokenRateSpan& s : spans) {
        t << s.from_s;
        prompt << s.prompt_per_s;
        gen << s.generation_per_s;
    }
    if (!spans.empty()) {
        t << spans.back().to_s;
        prompt << spans.back().prompt_per_s;
        gen << spans.back().generation_per_s;
    }
    graph(Series::PromptTokensPerS)->setData(t, prompt, true);
    graph(Series::GenerationTokensPerS)->setData(t, gen, true);
    double top = 1;
    for (const QVector<double>* v : {&prompt, &gen})
        if (!v->isEmpty())
            top = std::max(top, *std::max_element(v->begin(), v->end()) * 1.1);
    tokensPlot_->yAxis->setRange(0, top);
}

void ThroughputPanel::updateFigures(const EngineSnapshot& s) {
    figures_->setText(tr("TTFT (engine: arrival \u2192 first token) p50 %1 · p95 %2   |   inter-token p50 %3 · p95 %4   |   last step %5   |   "
                         "preemptions %6   |   prefix cache hit rate %7%   |   completed %8 · aborted %9 · failed %10")
                          .arg(ms(s.ttft.p50_ms), ms(s.ttft.p95_ms), ms(s.itl.p50_ms), ms(s.itl.p95_ms), stepText(s))
                          .arg(s.preemptions)
                          .arg(100.0 * s.prefix_hit_rate, 0, 'f', 1)
                          .arg(s.completed_requests)
                          .arg(s.aborted_requests)
                          .arg(s.failed_requests));
    QString tip = ttftToolTip();
    if (s.last_step_expert_s > 0)
        tip += QStringLiteral("\n\n") + tr("Experts: the share of the last step's time spent in the "
                                            "mixture-of-experts FFNs, the router and the experts it picked");
    figures_->setToolTip(tip);
}

std::vector<double> ThroughputPanel::series(Series s) const { return graphValues(graph(s)); }

bool ThroughputPanel::expertPlotShown() const { return expertPlot_->isVisibleTo(this); }

QString ThroughputPanel::figuresText() const { return figures_->text(); }

} // namespace kvscope::ui
