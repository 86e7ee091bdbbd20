#include "ui/dashboards/kv_quant_panel.h"

#include <QFile>
#include <QFileDialog>
#include <QGroupBox>
#include <QProgressBar>
#include <QPushButton>
#include <QSpinBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLocale>
#include <QTableWidget>
#include <QShowEvent>
#include <QTimer>
#include <QVBoxLayout>

#include "ui/dashboards/dashboard_plot.h"

namespace kvscope::ui {
namespace {

enum CostColumn { kDtype, kPerToken, kKvNow, kVsF16, kFit, kCostColumns };

constexpr int kRefreshMs = 250;
// Below this the bars' labels and axes do not fit: the panel scrolls instead.
constexpr int kMinPlotHeight = 170;
constexpr int kMinTableHeight = 150;

QString dtypeName(KvDtype d) {
    const std::string_view name = to_string(d);
    return QString::fromUtf8(name.data(), static_cast<qsizetype>(name.size()));
}

QString bytes(std::uint64_t n) {
    return QLocale().formattedDataSize(static_cast<qint64>(n), 2, QLocale::DataSizeIecFormat);
}

QCPBars* newBars(QCustomPlot* plot, const QColor& color) {
    auto* bars = new QCPBars(plot->xAxis, plot->yAxis);
    bars->setPen(Qt::NoPen);
    bars->setBrush(color);
    bars->setWidth(0.7);
    return bars;
}

QTableWidget* newTable(QWidget* parent, const QStringList& headers) {
    auto* table = new QTableWidget(0, static_cast<int>(headers.size()), parent);
    table->setHorizontalHeaderLabels(headers);
    table->verticalHeader()->setVisible(false);
    table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    table->horizontalHeader()->setStretchLastSection(true);
    return table;
}

QTableWidgetItem* cell(const QString& text, const QString& tip = {}) {
    auto* item = new QTableWidgetItem(text);
    item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
    item->setToolTip(tip);
    return item;
}

void setCell(QTableWidgetItem* item, const QString& text, const QString& tip = {}) {
    item->setText(text);
    item->setToolTip(tip);
}

bool sameShape(const KvQuantCosts& a, const KvQuantCosts& b) {
    return a.geometry.n_layers == b.geometry.n_layers && a.geometry.n_kv_heads == b.geometry.n_kv_heads &&
           a.geometry.head_dim == b.geometry.head_dim && a.block_size == b.block_size &&
           a.pool_dtype == b.pool_dtype && a.pool_bytes == b.pool_bytes && a.sequences == b.sequences &&
           a.used_blocks == b.used_blocks && a.context_tokens == b.context_tokens && a.rows.size() == b.rows.size();
}

QCPItemText* newEmptyNote(QCustomPlot* plot, const QString& text) {
    auto* note = new QCPItemText(plot);
    note->position->setType(QCPItemPosition::ptAxisRectRatio);
    note->position->setCoords(0.5, 0.4);
    note->setText(text); // coloured by followPalette
    note->setVisible(false);
    return note;
}

} // namespace

KvQuantPanel::KvQuantPanel(QWidget* parent)
    : QWidget(parent),
      tokenPlot_(newDashboardPlot(this, tr("KV dtype"), tr("bytes per token"), false)),
      totalPlot_(newDashboardPlot(this, tr("KV dtype"), tr("KV MiB in use now"), false)),
      tokenBars_(newBars(tokenPlot_, QColor(0x1f, 0x77, 0xb4))),
      totalBars_(newBars(totalPlot_, QColor(0x2c, 0xa0, 0x2c))),
      kvNowEmpty_(newEmptyNote(totalPlot_, tr("No sequence holds KV now.\nStart a chat or a workload."))),
      context_(new QLabel(tr("No model loaded"), this)),
      costTable_(newTable(this, {tr("KV dtype"), tr("per token"), tr("KV in use now"), tr("vs f16"),
                                 tr("sequences that fit in this pool")})),
      accuracyNote_(new QLabel(this)),
      accuracyTable_(newTable(this, {tr("KV dtype"), tr("bytes/token"), tr("perplexity"), tr("Δ vs f32"),
                                     tr("KL divergence"), tr("top-1 agreement")})),
      measurement_(new AccuracyMeasurement(this)),
      measure_(new QPushButton(tr("Measure accuracy"), this)),
      measureFile_(new QPushButton(tr("On a text file…"), this)),
      cancel_(new QPushButton(tr("Cancel"), this)),
      window_(new QSpinBox(this)),
      progress_(new QProgressBar(this)),
      refresh_(new QTimer(this)) {
    refresh_->setSingleShot(true);
    connect(refresh_, &QTimer::timeout, this, [this] {
        if (pending_ && isVisible())
            showCosts();
    });
    context_->setWordWrap(true);
    accuracyNote_->setWordWrap(true);
    accuracyNote_->setText(tr("Not measured yet: Measure accuracy scores a built-in sample text (or a text file "
                              "of yours) with every KV dtype against f32 KV (perplexity, KL divergence, top-1 "
                              "agreement)."));
    tokenPlot_->setObjectName(QStringLiteral("bytesPerTokenPlot"));
    totalPlot_->setObjectName(QStringLiteral("kvNowPlot"));
    for (QCustomPlot* plot : {tokenPlot_, totalPlot_})
        plot->setMinimumHeight(kMinPlotHeight);
    costTable_->setMinimumHeight(kMinTableHeight);
    costTable_->horizontalHeaderItem(kKvNow)->setToolTip(
        tr("The pool's blocks in use (a shared block once) in each dtype, with the fp8 scales and KIVI tails "
           "they need. Queued requests hold no KV; swapped-out ones hold theirs in host memory."));
    auto* plots = new QHBoxLayout;
    plots->addWidget(tokenPlot_);
    plots->addWidget(totalPlot_);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 4, 4, 4);
    layout->addWidget(context_);
    layout->addLayout(plots, 1);
    layout->addWidget(costTable_, 1);
    layout->addWidget(buildAccuracySection(), 1);
}

QWidget* KvQuantPanel::buildAccuracySection() {
    window_->setRange(0, 1 << 20);
    window_->setSpecialValueText(tr("model's context"));
    window_->setPrefix(tr("window "));
    window_->setToolTip(tr("Tokens per evaluation window; longer texts are scored in several windows"));
    progress_->setFormat(tr("window %v of %m"));
    connect(measure_, &QPushButton::clicked, this, [this] { measureAccuracy(AccuracyMeasurement::sampleText()); });
    connect(measureFile_, &QPushButton::clicked, this, &KvQuantPanel::chooseTextAndMeasure);
    connect(cancel_, &QPushButton::clicked, measurement_, &AccuracyMeasurement::cancel);
    connect(measurement_, &AccuracyMeasurement::progress, this, [this](int done, int total) {
        progress_->setRange(0, total);
        progress_->setValue(done);
    });
    connect(measurement_, &AccuracyMeasurement::finished, this, &KvQuantPanel::showAccuracyResult);
    connect(measurement_, &AccuracyMeasurement::failed, this, [this](const QString& message) {
        accuracyNote_->setText(tr("The measurement failed: %1").arg(message));
    });
    // A cancelled run stops at its next scored position, without a result.
    connect(cancel_, &QPushButton::clicked, this, [this] { accuracyNote_->setText(tr("Cancelled.")); });
    connect(measurement_, &AccuracyMeasurement::stopped, this, [this] { showMeasuring(false); });

    auto* box = new QGroupBox(tr("Measured accuracy"), this);
    auto* controls = new QHBoxLayout;
    controls->addWidget(measure_);
    controls->addWidget(measureFile_);
    controls->addWidget(window_);
    controls->addWidget(progress_, 1);
    controls->addWidget(cancel_);
    controls->addStretch(1);
    auto* layout = new QVBoxLayout(box);
    layout->addLayout(controls);
    layout->addWidget(accuracyNote_);
    layout->addWidget(accuracyTable_);
    accuracyTable_->setMinimumHeight(kMinTableHeight);
    showMeasuring(false);
    return box;
}

void KvQuantPanel::showMeasuring(bool measuring) {
    measure_->setEnabled(!measuring && model_ != nullptr);
    measureFile_->setEnabled(!measuring && model_ != nullptr);
    measure_->setToolTip(model_ ? tr("Score the built-in sample text (a short story, %1) with every KV dtype "
                                     "against f32 KV")
                                      .arg(QLocale().formattedDataSize(QFile(AccuracyMeasurement::sampleText()).size()))
                                : tr("Load a model first"));
    measureFile_->setToolTip(model_ ? tr("Score a text file of yours with every KV dtype against f32 KV")
                                    : tr("Load a model first"));
    window_->setEnabled(!measuring);
    cancel_->setVisible(measuring);
    progress_->setVisible(measuring);
}

void KvQuantPanel::setModel(std::shared_ptr<const Model> model, const QString& name) {
    const bool another = model != model_;
    model_ = std::move(model);
    modelName_ = name;
    if (another) {
        // Results belong to the model they were measured on.
        measurement_->cancel();
        setAccuracyRows({});
        accuracyNote_->setText(model_ ? tr("Not measured yet for %1.").arg(name.isEmpty() ? tr("this model") : name)
                                      : tr("Load a model to measure accuracy."));
    }
    showMeasuring(measurement_->isRunning());
}

void KvQuantPanel::showAccuracyResult(const std::vector<AccuracyRow>& rows, const QString& note) {
    if (measuredModel_ != model_)
        return; // finished just as another model came: not this model's figures
    setAccuracyRows(rows, modelName_.isEmpty() ? note : tr("%1 — %2").arg(modelName_, note));
}

void KvQuantPanel::chooseTextAndMeasure() {
    const QString file = QFileDialog::getOpenFileName(this, tr("Text to score"), QString(),
                                                      tr("Text files (*.txt);;All files (*)"));
    if (!file.isEmpty())
        measureAccuracy(file);
}

void KvQuantPanel::measureAccuracy(const QString& textFile, std::uint32_t context) {
    if (!model_ || measurement_->isRunning())
        return;
    progress_->setRange(0, 0); // busy until the first window is done
    accuracyNote_->setText(tr("Measuring %1…")
                               .arg(textFile == AccuracyMeasurement::sampleText() ? tr("the built-in sample text")
                                                                                  : textFile));
    measuredModel_ = model_;
    showMeasuring(true);
    measurement_->start(model_, textFile, context > 0 ? context : static_cast<std::uint32_t>(window_->value()));
}

void KvQuantPanel::setSnapshot(std::shared_ptr<const EngineSnapshot> snapshot) {
    if (!snapshot || !snapshot->pool)
        return;
    KvQuantCosts costs = kv_quant_costs(*snapshot);
    // Snapshots come ~30 times a second; the costs change only when the
    // sequences' lengths or the pool do.
    if (!costs_.rows.empty() && sameShape(costs, costs_))
        return;
    costs_ = std::move(costs);
    if (!isVisible()) {
        pending_ = true;
        return;
    }
    if (sinceShown_.isValid() && sinceShown_.elapsed() < kRefreshMs) {
        pending_ = true;
        if (!refresh_->isActive())
            refresh_->start(kRefreshMs - static_cast<int>(sinceShown_.elapsed()));
        return;
    }
    showCosts();
}

void KvQuantPanel::showEvent(QShowEvent* event) {
    QWidget::showEvent(event);
    if (pending_)
        showCosts();
}

void KvQuantPanel::showCosts() {
    pending_ = false;
    sinceShown_.start();
    const KvGeometry& g = costs_.geometry;
    const QString shape = tr("%1 layers × %2 KV heads × head_dim %3, block size %4. Pool: %5 in %6.")
                              .arg(g.n_layers)
                              .arg(g.n_kv_heads)
                              .arg(g.head_dim)
                              .arg(costs_.block_size)
                              .arg(bytes(costs_.pool_bytes), dtypeName(costs_.pool_dtype));
    const QString holders =
        costs_.holdsKv()
            ? tr("%n sequence(s) hold KV: %1 tokens in all (mean %2), %3 blocks in use.", nullptr,
                 static_cast<int>(costs_.sequences))
                  .arg(costs_.context_tokens)
                  .arg(costs_.mean_tokens)
                  .arg(costs_.used_blocks)
            : tr("No sequence holds KV now: per token is all there is to compare.");
    context_->setText(shape + QLatin1Char(' ') + holders);
    fillCostTable();
    fillBars();
}

QTableWidgetItem* KvQuantPanel::itemAt(QTableWidget* table, int row, int column) {
    QTableWidgetItem* item = table->item(row, column);
    if (!item) {
        item = column == 0 ? new QTableWidgetItem : cell(QString());
        table->setItem(row, column, item);
    }
    return item;
}

void KvQuantPanel::fillCostTable() {
    const bool newRows = costTable_->rowCount() != static_cast<int>(costs_.rows.size());
    costTable_->setRowCount(static_cast<int>(costs_.rows.size()));
    double f16PerToken = 0;
    for (const KvDtypeCost& r : costs_.rows)
        if (r.dtype == KvDtype::F16)
            f16PerToken = static_cast<double>(r.bytes_per_token);
    const QString fitTip =
        tr("Sequences of %1 tokens (the current mean) in %2").arg(costs_.mean_tokens).arg(bytes(costs_.pool_bytes));
    for (int i = 0; i < costTable_->rowCount(); ++i) {
        const KvDtypeCost& r = costs_.rows[static_cast<std::size_t>(i)];
        setCell(itemAt(costTable_, i, kDtype),
                dtypeName(r.dtype) + (r.dtype == costs_.pool_dtype ? tr(" (pool)") : QString()));
        if (!r.unavailable.empty()) {
            for (int c = kPerToken; c < kCostColumns; ++c)
                setCell(itemAt(costTable_, i, c), tr("n/a"), QString::fromStdString(r.unavailable));
            continue;
        }
        setCell(itemAt(costTable_, i, kPerToken), bytes(r.bytes_per_token), tr("%1 bytes").arg(r.bytes_per_token));
        setCell(itemAt(costTable_, i, kKvNow), costs_.holdsKv() ? bytes(r.kv_bytes) : tr("—"),
                costs_.holdsKv() ? tr("%1 bytes").arg(r.kv_bytes) : tr("No sequence holds KV now"));
        setCell(itemAt(costTable_, i, kVsF16),
                r.bytes_per_token
                    ? QString::number(f16PerToken / static_cast<double>(r.bytes_per_token), 'f', 2) + QStringLiteral("×")
                    : QString());
        setCell(itemAt(costTable_, i, kFit),
                r.sequences_that_fit ? QString::number(*r.sequences_that_fit) : tr("—"), fitTip);
    }
    if (newRows)
        costTable_->resizeColumnsToContents();
}

void KvQuantPanel::fillBars() {
    QVector<double> keys, perToken, totalMiB;
    auto ticker = QSharedPointer<QCPAxisTickerText>::create();
    for (std::size_t i = 0; i < costs_.rows.size(); ++i) {
        const KvDtypeCost& r = costs_.rows[i];
        keys << static_cast<double>(i);
        perToken << static_cast<double>(r.bytes_per_token);
        totalMiB << static_cast<double>(r.kv_bytes) / (1024.0 * 1024.0);
        ticker->addTick(static_cast<double>(i), dtypeName(r.dtype));
    }
    tokenBars_->setData(keys, perToken, true);
    // Without sequences only fp8's fixed scales would be left: a bar that
    // reads as "fp8 costs most". The chart says there is nothing instead.
    if (costs_.holdsKv())
        totalBars_->setData(keys, totalMiB, true);
    else
        totalBars_->data()->clear();
    kvNowEmpty_->setVisible(!costs_.holdsKv());
    for (QCustomPlot* plot : {tokenPlot_, totalPlot_}) {
        plot->xAxis->setTicker(ticker);
        plot->xAxis->setTickLabelRotation(45);
        plot->xAxis->setRange(-0.6, static_cast<double>(keys.size()) - 0.4);
    }
    tokenBars_->rescaleValueAxis(false, true);
    tokenPlot_->yAxis->setRangeLower(0);
    if (costs_.holdsKv()) {
        totalBars_->rescaleValueAxis(false, true);
        totalPlot_->yAxis->setRangeLower(0);
    } else {
        totalPlot_->yAxis->setRange(0, 1);
    }
    queueReplot(tokenPlot_);
    queueReplot(totalPlot_);
}

void KvQuantPanel::setAccuracyRows(const std::vector<AccuracyRow>& rows, const QString& note) {
    accuracyTable_->setRowCount(static_cast<int>(rows.size()));
    for (int i = 0; i < accuracyTable_->rowCount(); ++i) {
        const AccuracyRow& r = rows[static_cast<std::size_t>(i)];
        accuracyTable_->setItem(i, 0, new QTableWidgetItem(r.dtype));
        accuracyTable_->setItem(i, 1, cell(QString::number(r.bytes_per_token, 'f', 1)));
        accuracyTable_->setItem(i, 2, cell(QString::number(r.perplexity, 'f', 4)));
        accuracyTable_->setItem(i, 3, cell(QString::number(r.delta_pct, 'f', 2) + QLatin1Char('%')));
        accuracyTable_->setItem(i, 4, cell(QString::number(r.kld, 'g', 4)));
        accuracyTable_->setItem(i, 5, cell(QString::number(100.0 * r.top1_agreement, 'f', 1) + QLatin1Char('%')));
    }
    accuracyTable_->resizeColumnsToContents();
    if (!note.isEmpty())
        accuracyNote_->setText(note);
}

std::vector<double> KvQuantPanel::barValues(Bars bars) const {
    const QCPBars* b = bars == Bars::BytesPerToken ? tokenBars_ : totalBars_;
    std::vector<double> values;
    for (const QCPBarsData& d : *b->data())
        values.push_back(d.value);
    return values;
}

QString KvQuantPanel::costCell(int row, int column) const {
    const QTableWidgetItem* item = costTable_->item(row, column);
    return item ? item->text() : QString();
}

QString KvQuantPanel::accuracyCell(int row, int column) const {
    const QTableWidgetItem* item = accuracyTable_->item(row, column);
    return item ? item->text() : QString();
}

int KvQuantPanel::accuracyRowCount() const { return accuracyTable_->rowCount(); }

QString KvQuantPanel::accuracyNoteText() const { return accuracyNote_->text(); }

QString KvQuantPanel::kvNowEmptyText() const { return kvNowEmpty_->visible() ? kvNowEmpty_->text() : QString(); }

} // namespace kvscope::ui
