// The dashboards fed by real engine snapshots: stories260K serving a few
// requests (shared system prompt, parallel samples) through a paged and a
// contiguous pool, and a real 65,536-block KvCacheManager for binning. Each
// check compares what a panel holds (plot data, table cells, pixels) with
// the snapshot's own figures.
#include <QtTest>

#include <QBuffer>
#include <QFile>
#include <QImage>
#include <QProgressBar>
#include <QPushButton>
#include <QSignalSpy>
#include <QSpinBox>

#include <algorithm>
#include <bit>
#include <cmath>
#include <set>

#include "engine/engine.h"
#include "support/test_models.h"
#include "ui/dashboards/accuracy_measurement.h"
#include "engine/kv/contiguous_reservation.h"
#include "engine/model/tensor_stats.h"
#include "ui/dashboards/fragmentation_panel.h"
#include "ui/settings/kv_calculator_dialog.h"
#include "ui/dashboards/kv_quant_panel.h"
#include "ui/dashboards/snapshot_history.h"
#include "ui/bridge/snapshot_metatype.h"
#include "ui/dashboards/throughput_panel.h"
#include "ui/dashboards/token_rate_spans.h"
#include "ui/settings/workload_dock.h"

using namespace kvscope;
using namespace kvscope::ui;

namespace {

using Snapshots = std::vector<std::shared_ptr<const EngineSnapshot>>;

// Serves a few stories requests to completion, one snapshot per step.
Snapshots serve(const std::shared_ptr<const Model>& model, AllocationMode mode) {
    EngineConfig config;
    config.kv_dtype = KvDtype::F32;
    config.block_size = 8;
    config.num_blocks = 96;
    config.watermark = 0;
    config.allocation = mode;
    config.threads = 1;
    Engine engine(config, model);
    const std::string system = "Once upon a time, there was a little girl who lived in a village. ";
    const char* prompts[] = {"She liked", "One day", "Her dog", "The sun"};
    for (int i = 0; i < 4; ++i) {
        RequestParams p;
        p.max_new_tokens = 12 + 9 * static_cast<std::uint32_t>(i);
        p.n = i == 1 ? 2 : 1;
        p.ignore_eos = true;
        engine.add_request(system + prompts[i], p).id();
    }
    Snapshots snaps{engine.snapshot()};
    for (int i = 0; i < 1000 && engine.has_work(); ++i) {
        engine.step();
        snaps.push_back(engine.snapshot());
    }
    return snaps;
}

double fillOf(const PoolSnapshot& pool, std::size_t block) {
    const BlockInfo& b = pool.blocks[block];
    const bool live = b.state != BlockState::Free && b.state != BlockState::CachedFree;
    return live ? static_cast<double>(b.fill) / pool.layout.block_size() : 0.0;
}

// Panels draw while shown (a hidden one catches up when shown).
void feed(auto& panel, const Snapshots& snaps) {
    panel.show();
    for (const auto& s : snaps)
        panel.setSnapshot(s);
}

// Distinct colours in a widget's rendering, after queued replots ran.
int distinctColours(QWidget& w) {
    w.resize(900, 600);
    w.show();
    QCoreApplication::processEvents();
    const QImage image = w.grab().toImage();
    std::set<QRgb> colours;
    for (int y = 0; y < image.height(); y += 2)
        for (int x = 0; x < image.width(); x += 2)
            colours.insert(image.pixel(x, y));
    return static_cast<int>(colours.size());
}

QImage rendering(QWidget& w) {
    w.resize(900, 600);
    w.show();
    QCoreApplication::processEvents();
    return w.grab().toImage();
}

} // namespace

class TestDashboards : public QObject {
    Q_OBJECT
private slots:
    void initTestCase();
    void history_records_each_snapshot_once();
    void csv_has_a_header_and_one_row_per_snapshot();
    void heatmap_cells_equal_block_fill_fractions();
    void heatmap_bins_a_65536_block_pool();
    void waste_series_equal_the_snapshots_figures();
    void counterfactual_is_at_least_paged_waste();
    void counterfactual_of_a_contiguous_pool_is_its_own_waste();
    void fragmentation_panel_paints_the_snapshots();
    void heatmap_colours_free_light_and_full_dark();
    void hidden_panels_draw_when_shown();
    void throughput_series_equal_the_snapshots();
    void kv_quant_bars_come_from_kv_layout();
    void kv_now_is_empty_while_no_sequence_holds_kv();
    void kv_quant_charts_keep_their_height();
    void kivi_bytes_per_token_agree_everywhere();
    void accuracy_of_another_model_is_cleared();
    void measures_the_built_in_sample_text();
    void accuracy_rows_fill_the_table();
    void measure_accuracy_fills_the_table();
    void cancel_stops_the_accuracy_measurement();
    void workload_dock_emits_the_spec();
    void workload_dock_refuses_an_impossible_spec();

private:
    std::shared_ptr<const Model> model_;
    Snapshots paged_, contiguous_;
};

void TestDashboards::initTestCase() {
    registerDashboardMetaTypes();
    KVSCOPE_REQUIRE_MODEL(path, "stories260K-f32.gguf");
    model_ = std::make_shared<const Model>(path.toStdString());
    paged_ = serve(model_, AllocationMode::Paged);
    contiguous_ = serve(model_, AllocationMode::Contiguous);
    QVERIFY(paged_.size() > 20);
    QVERIFY2(paged_.back()->completed_requests == 4, "every request must finish");
}

void TestDashboards::history_records_each_snapshot_once() {
    SnapshotHistory history(1000);
    for (const auto& s : paged_) {
        history.record(*s);
        QVERIFY(!history.record(*s)); // a second panel passing on the same snapshot
    }
    QCOMPARE(history.entries().size(), paged_.size());
    QCOMPARE(history.entries().back().generated_tokens, paged_.back()->generated_tokens);

    SnapshotHistory small(5);
    for (const auto& s : paged_)
        small.record(*s);
    QCOMPARE(small.entries().size(), std::size_t{5});
    QCOMPARE(small.entries().front().step, paged_[paged_.size() - 5]->step);
    // A snapshot from a newer engine (time starts over) starts a new history.
    small.record(*contiguous_.front());
    QCOMPARE(small.entries().size(), std::size_t{1});
}

void TestDashboards::csv_has_a_header_and_one_row_per_snapshot() {
    SnapshotHistory history;
    for (const auto& s : paged_)
        history.record(*s);
    QBuffer buffer;
    QVERIFY(buffer.open(QIODevice::ReadWrite));
    QVERIFY(history.writeCsv(buffer));
    const QList<QByteArray> lines = buffer.data().trimmed().split('\n');
    QCOMPARE(lines.size(), static_cast<qsizetype>(paged_.size() + 1));
    const QList<QByteArray> header = lines[0].split(',');
    QVERIFY(header.size() >= 20);
    const auto column = [&](const char* name) { return header.indexOf(QByteArray(name)); };
    for (const char* name : {"step", "time_s", "generation_tokens_per_s", "busy_s", "last_step_s", "running", "waiting", "swapped",
                             "kv_block_occupancy_pct", "kv_token_occupancy_pct", "internal_waste_pct",
                             "reserved_waste_pct", "external_fragmentation_pct", "contiguous_reserved_waste_pct",
                             "preemptions", "prefix_hit_rate_pct", "ttft_p50_ms", "itl_p95_ms"})
        QVERIFY2(column(name) >= 0, name);
    for (std::size_t i = 0; i < paged_.size(); ++i) {
        const QList<QByteArray> row = lines[static_cast<qsizetype>(i + 1)].split(',');
        QCOMPARE(row.size(), header.size());
        const EngineSnapshot& s = *paged_[i];
        QCOMPARE(row[column("step")].toULongLong(), s.step);
        QCOMPARE(row[column("running")].toULongLong(), s.running);
        QVERIFY(std::abs(row[column("internal_waste_pct")].toDouble() -
                         100 * s.pool->fragmentation.internal_waste()) < 1e-3);
        QVERIFY(std::abs(row[column("kv_block_occupancy_pct")].toDouble() -
                         100 * s.pool->fragmentation.block_occupancy()) < 1e-3);
    }
    QVERIFY2(paged_.back()->prefix_hit_rate > 0, "the shared system prompt must hit the prefix cache");
}

void TestDashboards::heatmap_cells_equal_block_fill_fractions() {
    FragmentationPanel panel;
    feed(panel, paged_);
    QCOMPARE(panel.blocksPerRow(), std::size_t{1}); // 96 blocks: one row each
    const QSize size = panel.heatmapSize();
    // The rows cover the blocks in use (BlockFillColumns::extent): every
    // block that held a token in any snapshot, and no more than twice that.
    QCOMPARE(static_cast<std::size_t>(size.height()), panel.heatmapExtent());
    std::size_t used = 0;
    for (const auto& s : paged_)
        for (std::size_t b = 0; b < s->pool->blocks.size(); ++b)
            if (fillOf(*s->pool, b) > 0)
                used = std::max(used, b + 1);
    QVERIFY2(used <= panel.heatmapExtent() && panel.heatmapExtent() <= std::max<std::size_t>(16, 2 * used),
             qPrintable(QStringLiteral("%1 blocks used, %2 shown").arg(used).arg(panel.heatmapExtent())));
    // One snapshot per step and fewer steps than columns: column x is step
    // first + x exactly.
    QCOMPARE(size.width(), static_cast<int>(paged_.back()->step - paged_.front()->step + 1));
    int partial = 0;
    for (int x = 0; x < size.width(); ++x) {
        const PoolSnapshot& pool = *paged_[static_cast<std::size_t>(x)]->pool;
        QCOMPARE(paged_[static_cast<std::size_t>(x)]->step, paged_.front()->step + static_cast<std::uint64_t>(x));
        for (int y = 0; y < size.height(); ++y) {
            const double expected = fillOf(pool, static_cast<std::size_t>(y));
            QVERIFY2(std::abs(panel.heatmapCell(x, y) - expected) < 1e-6,
                     qPrintable(QStringLiteral("column %1 block %2").arg(x).arg(y)));
            partial += expected > 0 && expected < 1;
        }
    }
    QVERIFY2(partial > 0, "a pool mid-generation holds partially filled blocks");
}

void TestDashboards::heatmap_bins_a_65536_block_pool() {
    // A real KvCacheManager with the largest pool the block map supports.
    KvCacheConfig config{KvLayout({1, 1, 2}, KvDtype::F16, 16), 65536};
    KvCacheManager kv(config);
    std::vector<TokenId> prompt;
    for (SeqId seq = 1; seq <= 300; ++seq) {
        prompt.assign(static_cast<std::size_t>(37 * seq % 2000 + 1), static_cast<TokenId>(seq + 3));
        kv.allocate(seq, prompt, 0);
    }
    auto snapshot = std::make_shared<EngineSnapshot>();
    snapshot->step = 7;
    snapshot->pool = kv.snapshot();
    FragmentationPanel panel;
    feed(panel, {snapshot});
    // The rows cover the blocks in use and a quarter more, to a power of
    // two, in 256 rows of a power of two of blocks each.
    const PoolSnapshot& pool = *snapshot->pool;
    std::size_t used = 0;
    for (std::size_t b = 0; b < pool.blocks.size(); ++b)
        if (fillOf(pool, b) > 0)
            used = b + 1;
    QVERIFY(used > 0);
    QVERIFY2(used <= panel.heatmapExtent() && panel.heatmapExtent() <= 4 * used,
             qPrintable(QStringLiteral("%1 blocks used, %2 shown").arg(used).arg(panel.heatmapExtent())));
    const std::size_t perRow = panel.blocksPerRow();
    QCOMPARE(perRow, panel.heatmapExtent() / 256);
    QCOMPARE(std::bit_ceil(perRow), perRow);
    QCOMPARE(panel.heatmapSize(), QSize(2, 256));
    double filled = 0;
    for (int row = 0; row < 256; ++row) {
        double sum = 0;
        for (std::size_t b = static_cast<std::size_t>(row) * perRow; b < static_cast<std::size_t>(row + 1) * perRow; ++b)
            sum += fillOf(pool, b);
        QVERIFY(std::abs(panel.heatmapCell(1, row) - sum / static_cast<double>(perRow)) < 1e-5);
        filled += sum;
    }
    QCOMPARE(filled * 16, static_cast<double>(pool.fragmentation.token_slots));
}

void TestDashboards::waste_series_equal_the_snapshots_figures() {
    FragmentationPanel panel;
    feed(panel, paged_);
    using W = FragmentationPanel::WasteSeries;
    const auto internal = panel.wasteSeries(W::Internal);
    const auto reserved = panel.wasteSeries(W::Reserved);
    const auto external = panel.wasteSeries(W::External);
    QCOMPARE(internal.size(), paged_.size());
    double peak = 0;
    for (std::size_t i = 0; i < paged_.size(); ++i) {
        const FragmentationStats& f = paged_[i]->pool->fragmentation;
        QVERIFY(std::abs(internal[i] - 100 * f.internal_waste()) < 1e-9);
        QVERIFY(std::abs(reserved[i] - 100 * f.reserved_waste()) < 1e-9);
        QVERIFY(std::abs(external[i] - 100 * f.external_fragmentation()) < 1e-9);
        peak = std::max(peak, internal[i]);
    }
    QVERIFY2(peak > 0, "partially filled last blocks waste slots");
    QVERIFY(panel.summaryText().contains(QStringLiteral("internal")));
}

void TestDashboards::counterfactual_is_at_least_paged_waste() {
    FragmentationPanel panel;
    panel.setCounterfactualVisible(true);
    QVERIFY(panel.counterfactualVisible());
    feed(panel, paged_);
    using W = FragmentationPanel::WasteSeries;
    const auto internal = panel.wasteSeries(W::Internal);
    const auto reserved = panel.wasteSeries(W::Reserved);
    const auto contInternal = panel.wasteSeries(W::ContiguousInternal);
    const auto contReserved = panel.wasteSeries(W::ContiguousReserved);
    bool reservesMore = false;
    for (std::size_t i = 0; i < paged_.size(); ++i) {
        QVERIFY(contInternal[i] + contReserved[i] >= internal[i] + reserved[i] - 1e-9);
        QVERIFY(contInternal[i] >= internal[i] - 1e-9);
        reservesMore |= contReserved[i] > 0;
        // And equal to the counterfactual computed from the snapshot.
        const ContiguousCounterfactual c = contiguous_counterfactual(*paged_[i]->pool);
        QVERIFY(std::abs(contReserved[i] - 100 * c.reserved_waste()) < 1e-9);
    }
    QVERIFY2(reservesMore, "sequences still generating have reservations a contiguous allocator would hold");
    QVERIFY(panel.summaryText().contains(QStringLiteral("Contiguous")) ||
            paged_.back()->pool->sequences.empty());
}

void TestDashboards::counterfactual_of_a_contiguous_pool_is_its_own_waste() {
    // The engine's contiguous mode reserves exactly what the counterfactual
    // assumes, so on its snapshots both must agree slot for slot.
    int checked = 0;
    for (const auto& s : contiguous_) {
        const ContiguousCounterfactual c = contiguous_counterfactual(*s->pool);
        const FragmentationStats& f = s->pool->fragmentation;
        QCOMPARE(c.internal_waste_slots, f.internal_waste_slots);
        QCOMPARE(c.reserved_waste_slots, f.reserved_waste_slots);
        QCOMPARE(c.reserved_blocks, f.used_blocks);
        checked += c.sequences > 0;
    }
    QVERIFY(checked > 10);
}

void TestDashboards::fragmentation_panel_paints_the_snapshots() {
    FragmentationPanel empty;
    const QImage before = rendering(empty);
    FragmentationPanel panel;
    feed(panel, paged_);
    const QImage after = rendering(panel);
    QVERIFY(before != after);
    QVERIFY2(distinctColours(panel) > 40, "the heatmap paints a gradient of fills");
}

void TestDashboards::heatmap_colours_free_light_and_full_dark() {
    FragmentationPanel panel;
    const QColor free = panel.heatmapColour(0), half = panel.heatmapColour(0.5), full = panel.heatmapColour(1);
    QVERIFY2(free.lightness() > half.lightness() && half.lightness() > full.lightness(),
             qPrintable(free.name() + half.name() + full.name()));
    QVERIFY(full.blue() > full.red()); // the fill gradient, not QCustomPlot's default
}

void TestDashboards::hidden_panels_draw_when_shown() {
    // Tabbed docks in the background get every snapshot but draw only when
    // brought forward; then they show all they missed.
    auto history = std::make_shared<SnapshotHistory>();
    FragmentationPanel fragmentation(history);
    ThroughputPanel throughput(history);
    KvQuantPanel quant;
    throughput.setWindowSeconds(0);
    for (const auto& s : paged_) {
        fragmentation.setSnapshot(s);
        throughput.setSnapshot(s);
        quant.setSnapshot(s);
    }
    QCOMPARE(history->entries().size(), paged_.size());
    QVERIFY(fragmentation.wasteSeries(FragmentationPanel::WasteSeries::Internal).empty());
    QVERIFY(throughput.series(ThroughputPanel::Series::Running).empty());
    QVERIFY(quant.costCell(0, 1).isEmpty());
    fragmentation.show();
    throughput.show();
    quant.show();
    QCOMPARE(fragmentation.wasteSeries(FragmentationPanel::WasteSeries::Internal).size(), paged_.size());
    QCOMPARE(fragmentation.heatmapCell(fragmentation.heatmapSize().width() - 1, 0),
             fillOf(*paged_.back()->pool, 0));
    QCOMPARE(throughput.series(ThroughputPanel::Series::Running).size(), paged_.size());
    QVERIFY(!quant.costCell(0, 1).isEmpty());
}

void TestDashboards::throughput_series_equal_the_snapshots() {
    auto history = std::make_shared<SnapshotHistory>();
    ThroughputPanel panel(history);
    FragmentationPanel sharing(history); // the same history, fed the same snapshots
    panel.setWindowSeconds(0);
    panel.show();
    sharing.show();
    for (const auto& s : paged_) {
        panel.setSnapshot(s);
        sharing.setSnapshot(s);
    }
    QCOMPARE(history->entries().size(), paged_.size());
    using S = ThroughputPanel::Series;
    const auto gen = panel.series(S::GenerationTokensPerS);
    const auto running = panel.series(S::Running);
    const auto blocks = panel.series(S::BlockOccupancy);
    const auto tokens = panel.series(S::TokenOccupancy);
    // Tokens/s: one value per span between snapshots, the last one again;
    // under the curve, as many tokens as the engine sampled.
    const auto spans = token_rate_spans(history->entries());
    QCOMPARE(gen.size(), spans.size() + 1);
    double sampled = 0;
    for (std::size_t i = 0; i < spans.size(); ++i) {
        QCOMPARE(gen[i], spans[i].generation_per_s);
        sampled += gen[i] * (spans[i].to_s - spans[i].from_s);
    }
    const double expected = static_cast<double>(paged_.back()->generated_tokens - paged_.front()->generated_tokens);
    QVERIFY2(std::abs(sampled - expected) < 1e-6 * expected, qPrintable(QString::number(sampled)));
    for (std::size_t i = 0; i < paged_.size(); ++i) {
        QCOMPARE(running[i], static_cast<double>(paged_[i]->running));
        QVERIFY(std::abs(blocks[i] - 100 * paged_[i]->pool->fragmentation.block_occupancy()) < 1e-9);
        QVERIFY(std::abs(tokens[i] - 100 * paged_[i]->pool->fragmentation.token_occupancy()) < 1e-9);
    }
    QVERIFY(*std::max_element(gen.begin(), gen.end()) > 0);
    const EngineSnapshot& last = *paged_.back();
    const QString text = panel.figuresText();
    QVERIFY2(text.contains(QString::number(last.ttft.p50_ms, 'f', 1)), qPrintable(text));
    QVERIFY2(text.contains(QString::number(last.itl.p95_ms, 'f', 1)), qPrintable(text));
    QVERIFY(text.contains(QStringLiteral("preemptions %1").arg(last.preemptions)));
    // A rolling window shows only its tail.
    panel.setWindowSeconds(1e-9);
    QVERIFY(panel.series(S::Running).size() < paged_.size());
    panel.setWindowSeconds(0);
    QVERIFY2(distinctColours(panel) > 10, "the plots paint lines");
}

void TestDashboards::kv_quant_bars_come_from_kv_layout() {
    // Mid-run: sequences of several lengths are in flight.
    const auto& snap = paged_[paged_.size() / 2];
    QVERIFY(!snap->seqs.empty());
    KvQuantPanel panel;
    feed(panel, {snap});
    const auto dtypes = all_kv_dtypes();
    const auto perToken = panel.barValues(KvQuantPanel::Bars::BytesPerToken);
    const auto totals = panel.barValues(KvQuantPanel::Bars::KvBytes);
    QCOMPARE(perToken.size(), dtypes.size());
    const KvLayout& pool = snap->pool->layout;
    // What the pool holds: its sequences' K/V (a shared block once).
    std::uint64_t tokens = 0, holders = 0;
    for (const SequenceInfo& s : snap->pool->sequences)
        if (!s.swapped && s.num_tokens > 0) {
            tokens += s.num_tokens;
            ++holders;
        }
    QVERIFY(holders > 0);
    const std::uint64_t mean = (tokens + holders - 1) / holders;
    const std::size_t used = snap->pool->fragmentation.used_blocks;
    for (std::size_t i = 0; i < dtypes.size(); ++i) {
        const KvLayout layout(pool.geometry(), dtypes[i], pool.block_size());
        QCOMPARE(perToken[i], static_cast<double>(layout.bytes_per_token()));
        const double bytes = static_cast<double>(used * layout.bytes_per_block() + layout.fixed_bytes() +
                                                 holders * layout.tail_bytes());
        QVERIFY(std::abs(totals[i] - bytes / (1024.0 * 1024.0)) < 1e-9);
        QVERIFY(!panel.costCell(static_cast<int>(i), 1).isEmpty());
    }
    // In the pool's own dtype, sequences of the mean length that fit are the
    // pool's blocks over each one's blocks.
    const auto& rows = panel.costs().rows;
    const auto own = std::find_if(rows.begin(), rows.end(), [&](const KvDtypeCost& r) { return r.dtype == pool.dtype(); });
    QVERIFY(own != rows.end() && own->sequences_that_fit);
    QCOMPARE(*own->sequences_that_fit, snap->pool->fragmentation.total_blocks / pool.blocks_for_tokens(mean));
    QCOMPARE(panel.costCell(static_cast<int>(own - rows.begin()), 4), QString::number(*own->sequences_that_fit));
    // Narrower dtypes fit more.
    const auto f16 = std::find_if(rows.begin(), rows.end(), [](const KvDtypeCost& r) { return r.dtype == KvDtype::F16; });
    QVERIFY(*f16->sequences_that_fit > *own->sequences_that_fit);
    QVERIFY2(distinctColours(panel) > 10, "the bars are painted");
    // In its own dtype the KV in use never exceeds the pool.
    QVERIFY(own->kv_bytes <= panel.costs().pool_bytes);
    QVERIFY(panel.kvNowEmptyText().isEmpty());
}

void TestDashboards::kv_now_is_empty_while_no_sequence_holds_kv() {
    // Before the first step: four requests queued, none holding KV.
    const auto& queued = paged_.front();
    QVERIFY(queued->waiting > 0);
    QVERIFY(queued->pool->sequences.empty());
    KvQuantPanel panel;
    feed(panel, {queued});
    QCOMPARE(panel.costs().sequences, std::size_t{0});
    QVERIFY2(panel.barValues(KvQuantPanel::Bars::KvBytes).empty(), "not fp8's fixed scales alone");
    QVERIFY(!panel.barValues(KvQuantPanel::Bars::BytesPerToken).empty()); // per token still compares
    QVERIFY(panel.kvNowEmptyText().contains(QStringLiteral("No sequence holds KV")));
    for (int row = 0; row < static_cast<int>(all_kv_dtypes().size()); ++row) {
        QCOMPARE(panel.costCell(row, 2), QStringLiteral("\u2014"));
        QVERIFY(!panel.costCell(row, 1).isEmpty());
    }
    // And once sequences hold KV, the chart has its bars again.
    feed(panel, {paged_[paged_.size() / 2]});
    QTRY_VERIFY(panel.kvNowEmptyText().isEmpty()); // within the panel's 250 ms refresh
    QCOMPARE(panel.barValues(KvQuantPanel::Bars::KvBytes).size(), all_kv_dtypes().size());
}

void TestDashboards::kv_quant_charts_keep_their_height() {
    KvQuantPanel panel;
    feed(panel, {paged_[paged_.size() / 2]});
    panel.resize(400, 120); // a short dock: the scroll area around it scrolls
    QCoreApplication::processEvents();
    for (const char* name : {"bytesPerTokenPlot", "kvNowPlot"}) {
        const auto* plot = panel.findChild<QWidget*>(QLatin1String(name));
        QVERIFY(plot);
        QVERIFY2(plot->height() >= 150, qPrintable(QString::number(plot->height())));
    }
}

void TestDashboards::accuracy_rows_fill_the_table() {
    KvQuantPanel panel;
    QCOMPARE(panel.accuracyRowCount(), 0);
    panel.setAccuracyRows({{QStringLiteral("f32"), 1024, 5.25, 0, 0, 1}, {QStringLiteral("int4"), 144, 5.5, 4.76, 0.01, 0.97}},
                          QStringLiteral("measured on a text"));
    QCOMPARE(panel.accuracyRowCount(), 2);
    QCOMPARE(panel.accuracyCell(1, 0), QStringLiteral("int4"));
    QCOMPARE(panel.accuracyCell(1, 2), QStringLiteral("5.5000"));
    QCOMPARE(panel.accuracyCell(1, 3), QStringLiteral("4.76%"));
}

namespace {

const QString kStory = QStringLiteral(KVSCOPE_TEST_DATA "/tiny_story.txt");

} // namespace

void TestDashboards::measure_accuracy_fills_the_table() {
    KvQuantPanel panel;
    panel.measureAccuracy(kStory, 300);
    QVERIFY2(!panel.isMeasuringAccuracy(), "without a model there is nothing to measure");
    panel.setModel(model_);
    panel.measureAccuracy(kStory, 300);
    QVERIFY(panel.isMeasuringAccuracy()); // on its worker thread: this one keeps processing events
    QTRY_VERIFY_WITH_TIMEOUT(!panel.isMeasuringAccuracy(), 240000);
    const std::vector<KvDtype> dtypes = runnable_kv_dtypes(*model_, Backend::Cpu);
    QCOMPARE(panel.accuracyRowCount(), static_cast<int>(dtypes.size()));
    QCOMPARE(panel.accuracyCell(0, 0), QStringLiteral("f32"));
    QCOMPARE(panel.accuracyCell(0, 3), QStringLiteral("0.00%"));
    for (int row = 0; row < panel.accuracyRowCount(); ++row)
        QVERIFY(panel.accuracyCell(row, 2).toDouble() > 1.0); // a perplexity
    QVERIFY2(panel.accuracyNoteText().contains(QStringLiteral("3 window")), qPrintable(panel.accuracyNoteText()));
    const auto* progress = panel.findChild<QProgressBar*>();
    QVERIFY(progress);
    QCOMPARE(progress->maximum(), 3); // the engine's windows, each reported
    QCOMPARE(progress->value(), 3);

    panel.measureAccuracy(QStringLiteral("/no/such/file.txt"), 300);
    QTRY_VERIFY_WITH_TIMEOUT(!panel.isMeasuringAccuracy(), 60000);
    QVERIFY2(panel.accuracyNoteText().contains(QStringLiteral("/no/such/file.txt")), qPrintable(panel.accuracyNoteText()));
    QCOMPARE(panel.accuracyRowCount(), static_cast<int>(dtypes.size())); // the last result stays
}

void TestDashboards::cancel_stops_the_accuracy_measurement() {
    KvQuantPanel panel;
    panel.setModel(model_);
    panel.measureAccuracy(kStory, 300);
    QVERIFY(panel.isMeasuringAccuracy());
    const auto buttons = panel.findChildren<QPushButton*>();
    const auto cancel = std::find_if(buttons.begin(), buttons.end(),
                                     [](const QPushButton* b) { return b->text() == QStringLiteral("Cancel"); });
    QVERIFY(cancel != buttons.end());
    (*cancel)->click(); // long before the measurement's ~second of work is done
    QTRY_VERIFY_WITH_TIMEOUT(!panel.isMeasuringAccuracy(), 60000);
    QCOMPARE(panel.accuracyRowCount(), 0); // no result
    QCOMPARE(panel.accuracyNoteText(), QStringLiteral("Cancelled."));
}

// The calculator (`kvscope-cli calc` and its dialog), the panel and the
// accuracy measurement (`kvscope-cli perplexity`) give each dtype the same
// bytes per token: KvLayout's. KIVI's per-sequence f16 tail is not a
// per-token cost; spread over a text it made perplexity say 300 where the
// others say 280.
void TestDashboards::kivi_bytes_per_token_agree_everywhere() {
    const auto& snap = paged_[paged_.size() / 2];
    const KvLayout& pool = snap->pool->layout;
    KvQuantPanel panel;
    feed(panel, {snap});
    KvCalculatorDialog dialog;
    dialog.setLoadedModel(calc_model(model_->config(), TensorStats{}, "stories260K"));
    dialog.setEngineSettings(pool.dtype(), pool.block_size());
    KvAccuracyOptions options;
    options.kv_dtypes = {KvDtype::Int4Kivi, KvDtype::Int2Kivi, KvDtype::Int8, KvDtype::Fp8E4M3};
    options.block_size = pool.block_size();
    options.threads = 1;
    const std::vector<TokenId> tokens{1, 300, 301, 302, 303, 304, 305, 306, 307, 308};
    const KvAccuracyReport report = measure_kv_accuracy(*model_, tokens, options);
    const auto dtypes = all_kv_dtypes();
    for (const KvAccuracyRow& row : report.rows) {
        const auto at = static_cast<int>(std::find(dtypes.begin(), dtypes.end(), row.kv_dtype) - dtypes.begin());
        const KvLayout layout(pool.geometry(), row.kv_dtype, pool.block_size());
        const double expected = static_cast<double>(layout.bytes_per_token());
        QCOMPARE(row.bytes_per_token, expected);                                          // perplexity
        QCOMPARE(static_cast<double>(panel.costs().rows[static_cast<std::size_t>(at)].bytes_per_token), expected); // panel
        QCOMPARE(*dialog.cellValue(at, KvCalculatorDialog::kPerToken), expected);        // calculator
    }
    QCOMPARE(KvLayout(pool.geometry(), KvDtype::Int4Kivi, 16).bytes_per_token(), std::size_t{280});
}

void TestDashboards::accuracy_of_another_model_is_cleared() {
    KvQuantPanel panel;
    panel.setModel(model_, QStringLiteral("stories260K-f32.gguf"));
    panel.setAccuracyRows({{QStringLiteral("f32"), 1280, 5.25, 0, 0, 1}}, QStringLiteral("measured"));
    QCOMPARE(panel.accuracyRowCount(), 1);
    panel.setModel(model_, QStringLiteral("stories260K-f32.gguf")); // the same model again (after Apply)
    QCOMPARE(panel.accuracyRowCount(), 1);
    KVSCOPE_REQUIRE_MODEL(otherPath, "stories260K-f16.gguf");
    const auto other = std::make_shared<const Model>(otherPath.toStdString());
    panel.setModel(other, QStringLiteral("stories260K-f16.gguf"));
    QCOMPARE(panel.accuracyRowCount(), 0);
    QVERIFY2(panel.accuracyNoteText().contains(QStringLiteral("stories260K-f16.gguf")),
             qPrintable(panel.accuracyNoteText()));
}

void TestDashboards::measures_the_built_in_sample_text() {
    QFile sample(AccuracyMeasurement::sampleText());
    QVERIFY(sample.open(QIODevice::ReadOnly));
    QVERIFY(sample.size() > 2000); // a few KB of prose, compiled in
    KvQuantPanel panel;
    panel.setModel(model_, QStringLiteral("stories260K-f32.gguf"));
    panel.measureAccuracy(AccuracyMeasurement::sampleText(), 256);
    QVERIFY(panel.isMeasuringAccuracy());
    QTRY_VERIFY_WITH_TIMEOUT(!panel.isMeasuringAccuracy(), 240000);
    QVERIFY(panel.accuracyRowCount() > 1);
    QVERIFY2(panel.accuracyNoteText().startsWith(QStringLiteral("stories260K-f32.gguf")),
             qPrintable(panel.accuracyNoteText())); // labelled with its model
}

void TestDashboards::workload_dock_emits_the_spec() {
    WorkloadDock dock;
    QSignalSpy start(&dock, &WorkloadDock::startWorkloadRequested);
    QSignalSpy stop(&dock, &WorkloadDock::stopWorkloadRequested);
    dock.setModelLimits(512, 256);
    WorkloadSpec spec;
    spec.requests = 7;
    spec.distribution = LengthDistribution::Uniform;
    spec.prompt_len = 40;
    spec.output_len = 30;
    spec.min_len = 3;
    spec.max_total = 100;
    spec.arrival_rate = 2.5;
    spec.shared_prefix = 16;
    spec.n = 2;
    spec.seed = 42;
    spec.vocab = 512;
    dock.setSpec(spec);
    auto* startButton = dock.findChild<QPushButton*>(QStringLiteral("start"));
    QVERIFY(startButton && startButton->isEnabled());
    startButton->click();
    QVERIFY2(start.count() == 1, qPrintable(dock.statusText()));
    const auto sent = start.at(0).at(0).value<WorkloadSpec>();
    QCOMPARE(sent.requests, 7u);
    QCOMPARE(sent.distribution, LengthDistribution::Uniform);
    QCOMPARE(sent.prompt_len, 40u);
    QCOMPARE(sent.output_len, 30u);
    QCOMPARE(sent.min_len, 3u);
    QCOMPARE(sent.max_total, 100u);
    QCOMPARE(sent.arrival_rate, 2.5);
    QCOMPARE(sent.shared_prefix, 16u);
    QCOMPARE(sent.n, 2u);
    QCOMPARE(sent.seed, std::uint64_t{42});
    QCOMPARE(sent.vocab, 512u);
    dock.setWorkloadRunning(true);
    QVERIFY(!startButton->isEnabled());
    dock.requestStop();
    QCOMPARE(stop.count(), 1);
    dock.setWorkloadRunning(false);
    QVERIFY(startButton->isEnabled());
}

void TestDashboards::workload_dock_refuses_an_impossible_spec() {
    WorkloadDock dock;
    QSignalSpy start(&dock, &WorkloadDock::startWorkloadRequested);
    WorkloadSpec spec;
    spec.shared_prefix = 600; // longer than max_total allows
    spec.max_total = 512;
    dock.setSpec(spec);
    dock.requestStart();
    QCOMPARE(start.count(), 0);
    QVERIFY2(dock.statusText().contains(QStringLiteral("no room")), qPrintable(dock.statusText()));
}

QTEST_MAIN(TestDashboards)
#include "test_dashboards.moc"
