#include "ui/compare_panel.h"

#include <QGroupBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QSplitter>
#include <QTableWidget>
#include <QVBoxLayout>

#include "ui/engine_controller.h"
#include "ui/engine_settings_panel.h"
#include "ui/live_pool_panel.h"

namespace kvscope::ui {
namespace {

enum Column { kA, kB, kDifference, kColumns };

struct RowSpec {
    const char* label;
    const char* unit;
    int decimals;
    double (*value)(const EngineSnapshot&);
};

double fragmentation(const EngineSnapshot& s, double (FragmentationStats::*share)() const) {
    return (s.pool->fragmentation.*share)() * 100;
}

// One row per figure, in ComparePanel::Row order.
const RowSpec kRowSpecs[ComparePanel::kRows] = {
    {"Generation", "tok/s", 1, [](const EngineSnapshot& s) { return s.generation_tokens_per_s; }},
    {"Prompt", "tok/s", 1, [](const EngineSnapshot& s) { return s.prompt_tokens_per_s; }},
    {"Running", "seqs", 0, [](const EngineSnapshot& s) { return static_cast<double>(s.running); }},
    {"Waiting", "seqs", 0, [](const EngineSnapshot& s) { return static_cast<double>(s.waiting); }},
    {"Preemptions", "", 0, [](const EngineSnapshot& s) { return static_cast<double>(s.preemptions); }},
    {"Blocks in use", "%", 1, [](const EngineSnapshot& s) { return fragmentation(s, &FragmentationStats::block_occupancy); }},
    {"Slots holding tokens", "%", 1,
     [](const EngineSnapshot& s) { return fragmentation(s, &FragmentationStats::token_occupancy); }},
    {"Internal waste", "%", 1, [](const EngineSnapshot& s) { return fragmentation(s, &FragmentationStats::internal_waste); }},
    {"Reserved waste", "%", 1, [](const EngineSnapshot& s) { return fragmentation(s, &FragmentationStats::reserved_waste); }},
    {"External fragmentation", "%", 1,
     [](const EngineSnapshot& s) { return fragmentation(s, &FragmentationStats::external_fragmentation); }},
    {"TTFT p50", "ms", 1, [](const EngineSnapshot& s) { return s.ttft.p50_ms; }},
    {"TTFT p95", "ms", 1, [](const EngineSnapshot& s) { return s.ttft.p95_ms; }},
};


QString configText(const EngineConfig& c) {
    return QStringLiteral("%1, block %2, %3 blocks, %4")
        .arg(QString::fromStdString(std::string(to_string(c.kv_dtype))))
        .arg(c.block_size)
        .arg(c.num_blocks)
        .arg(QString::fromStdString(std::string(to_string(c.allocation))));
}

} // namespace

ComparePanel::ComparePanel(QWidget* parent)
    : QWidget(parent),
      settings_(new EngineSettingsPanel),
      start_(new QPushButton(tr("Start B"))),
      stop_(new QPushButton(tr("Stop B"))),
      note_(new QLabel),
      mapA_(new LivePoolPanel),
      mapB_(new LivePoolPanel),
      table_(new QTableWidget(kRows, kColumns)) {
    settings_->setObjectName(QStringLiteral("compareSettings"));
    EngineConfig b = EngineController::defaultConfig();
    b.allocation = AllocationMode::Contiguous; // the classic comparison
    settings_->setConfig(b);
    start_->setObjectName(QStringLiteral("startCompare"));
    stop_->setObjectName(QStringLiteral("stopCompare"));
    stop_->setEnabled(false);
    note_->setObjectName(QStringLiteral("compareNote"));
    note_->setWordWrap(true);
    note_->setText(tr("Load a model, choose B's settings and start B: every chat turn and workload then goes to "
                      "both engines. Both share this machine's CPU cores, so each one's speed is lower than alone; "
                      "every figure is measured by its own engine."));
    table_->setObjectName(QStringLiteral("compareTable"));
    table_->setHorizontalHeaderLabels({tr("A"), tr("B"), tr("B \u2212 A")});
    for (int r = 0; r < kRows; ++r) {
        const QString unit = QString::fromLatin1(kRowSpecs[r].unit);
        table_->setVerticalHeaderItem(
            r, new QTableWidgetItem(unit.isEmpty() ? tr(kRowSpecs[r].label)
                                                   : QStringLiteral("%1 (%2)").arg(tr(kRowSpecs[r].label), unit)));
        for (int c = 0; c < kColumns; ++c)
            table_->setItem(r, c, new QTableWidgetItem);
    }
    table_->horizontalHeader()->setSectionResizeMode(QHeaderView::Stretch);
    table_->setEditTriggers(QAbstractItemView::NoEditTriggers);

    auto* bBox = new QGroupBox(tr("Engine B"));
    auto* bLayout = new QVBoxLayout(bBox);
    bLayout->addWidget(settings_);
    auto* buttons = new QHBoxLayout;
    buttons->addWidget(start_);
    buttons->addWidget(stop_);
    bLayout->addLayout(buttons);
    bLayout->addStretch();
    auto* side = new QVBoxLayout;
    side->addWidget(bBox);
    side->addWidget(table_, 1);

    auto* maps = new QSplitter(Qt::Horizontal);
    const auto titled = [](const QString& title, QWidget* w) {
        auto* box = new QGroupBox(title);
        (new QVBoxLayout(box))->addWidget(w);
        return box;
    };
    maps->addWidget(titled(tr("A (the main engine)"), mapA_));
    maps->addWidget(titled(tr("B"), mapB_));
    auto* left = new QVBoxLayout;
    left->addWidget(note_);
    left->addWidget(maps, 1);
    auto* layout = new QHBoxLayout(this);
    layout->addLayout(left, 3);
    layout->addLayout(side, 1);

    connect(start_, &QPushButton::clicked, this, &ComparePanel::start);
    connect(settings_, &EngineSettingsPanel::applyRequested, this, [this](const EngineConfig& config) {
        if (engineB_)
            engineB_->applyConfig(config); // else Start B uses the form as it is
    });
    connect(stop_, &QPushButton::clicked, this, &ComparePanel::stop);
}

ComparePanel::~ComparePanel() = default;

void ComparePanel::setModelSource(const ModelSource& source) {
    // A's model is announced again when only A's configuration changed.
    const bool same = source_ && source_->path == source.path && source_->preset == source.preset;
    source_ = source;
    if (isRunning() && !same)
        engineB_->loadModel(source);
}

void ComparePanel::start() {
    if (!source_) {
        emit errorOccurred(tr("Load a model first: engine B runs the same model as A."));
        return;
    }
    stop();
    const EngineConfig config = settings_->config();
    engineB_ = std::make_unique<EngineThread>(config);
    EngineController* c = engineB_->controller();
    connect(c, &EngineController::snapshotReady, this, &ComparePanel::showSnapshotB);
    connect(c, &EngineController::chatStarted, this, [this](int chat, quint64 request) { chatsB_[request] = chat; });
    connect(c, &EngineController::configApplied, settings_, &EngineSettingsPanel::setConfig);
    connect(c, &EngineController::errorOccurred, this, &ComparePanel::errorOccurred);
    connect(c, &EngineController::modelLoadFailed, this,
            [this](const QString& m) { emit errorOccurred(tr("Engine B could not load the model: %1").arg(m)); });
    connect(c, &EngineController::modelLoaded, this,
            [this, config] { note_->setText(tr("B runs %1. Turns and workloads go to both engines; they share this "
                                               "machine's CPU cores, so each is slower than alone, and every figure "
                                               "is its own engine's measurement.")
                                                .arg(configText(config))); });
    engineB_->loadModel(*source_);
    note_->setText(tr("Engine B is loading %1...").arg(source_->label()));
    start_->setEnabled(false);
    stop_->setEnabled(true);
    emit runningChanged(true);
}

void ComparePanel::stop() {
    if (!engineB_)
        return;
    engineB_.reset(); // stops B's thread after its current step
    chatsB_.clear();
    lastB_.reset();
    start_->setEnabled(true);
    stop_->setEnabled(false);
    emit runningChanged(false);
}

void ComparePanel::submitChat(const ChatTurn& turn) {
    if (engineB_)
        engineB_->submitChat(turn);
}
void ComparePanel::abortChat(int chat) {
    if (engineB_)
        engineB_->abortChat(chat);
}
void ComparePanel::startWorkload(const WorkloadSpec& spec) {
    if (engineB_)
        engineB_->startWorkload(spec);
}
void ComparePanel::stopWorkload() {
    if (engineB_)
        engineB_->stopWorkload();
}

void ComparePanel::showSnapshotA(std::shared_ptr<const EngineSnapshot> snapshot, const SequencePalette& palette) {
    mapA_->setSnapshot(snapshot, palette);
    lastA_ = std::move(snapshot);
    if (isVisible())
        fillTable();
}

void ComparePanel::showSnapshotB(std::shared_ptr<const EngineSnapshot> snapshot) {
    if (!snapshot || !snapshot->pool)
        return;
    mapB_->setSnapshot(snapshot, chatPalette(*snapshot, chatsB_));
    lastB_ = snapshot;
    fillTable();
    emit snapshotBShown(std::move(snapshot));
}

void ComparePanel::fillTable() {
    for (int r = 0; r < kRows; ++r) {
        const auto value = [&](const std::shared_ptr<const EngineSnapshot>& s) -> std::optional<double> {
            return s ? std::optional(kRowSpecs[r].value(*s)) : std::nullopt;
        };
        const auto a = value(lastA_);
        const auto b = value(lastB_);
        const auto text = [&](double v) { return QString::number(v, 'f', kRowSpecs[r].decimals); };
        table_->item(r, kA)->setText(a ? text(*a) : QString());
        table_->item(r, kB)->setText(b ? text(*b) : QString());
        table_->item(r, kDifference)->setText(a && b ? text(*b - *a) : QString());
    }
}

QString ComparePanel::cell(Row row, int column) const { return table_->item(row, column)->text(); }

} // namespace kvscope::ui
