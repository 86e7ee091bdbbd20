#include "ui/compare/compare_panel.h"

#include <algorithm>
#include <cmath>

#include <nlohmann/json.hpp>

#include <QFontMetrics>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QScrollArea>
#include <QSplitter>
#include <QStyle>
#include <QTabWidget>
#include <QTableWidget>
#include <QVBoxLayout>

#include "ui/blockmap/block_lanes.h"
#include "ui/bridge/engine_controller.h"
#include "ui/settings/engine_settings_panel.h"
#include "ui/blockmap/live_pool_panel.h"

namespace kvscope::ui {
namespace {

enum Column { kA, kB, kDifference, kColumns };
constexpr int kCellPadding = 8; // each side of a cell's text, as the style draws it and then some
constexpr int kMinFormHeight = 120; // B's settings: a few rows, the rest scrolls
constexpr int kRepliesTab = 1;

// The widest texts a column must show whole: a figure (a sign, six digits,
// a decimal) and the longest setting words.
const char* const kWidestTexts[] = {"\u2212000000.0", "contiguous", "recompute", "int4-kivi", "fp8-e4m3"};
const QString kNoData = QStringLiteral("\u2014");

// Which way a figure is better, for the B − A column's verdict; Neither
// for a count that only describes the load (sequences running).
enum class Better { Higher, Lower, Neither };

struct RowSpec {
    const char* label;
    const char* unit;
    int decimals;
    std::optional<double> (*value)(const EngineSnapshot&);
    Better better;
};

double fragmentation(const EngineSnapshot& s, double (FragmentationStats::*share)() const) {
    return (s.pool->fragmentation.*share)() * 100;
}

// A rate means nothing before the engine computed a token of that kind, a
// latency percentile nothing before its first sample (the snapshot's 0).
std::optional<double> measured(bool has, double value) { return has ? std::optional(value) : std::nullopt; }

// One row per figure, in ComparePanel::Row order.
const RowSpec kRowSpecs[ComparePanel::kRows] = {
    {"Generation", "tok/s", 1,
     [](const EngineSnapshot& s) { return measured(s.generated_tokens > 0, s.generation_tokens_per_s); }, Better::Higher},
    {"Prompt", "tok/s", 1, [](const EngineSnapshot& s) { return measured(s.prompt_tokens > 0, s.prompt_tokens_per_s); }, Better::Higher},
    {"Running", "seqs", 0, [](const EngineSnapshot& s) { return std::optional(static_cast<double>(s.running)); }, Better::Neither},
    {"Waiting", "seqs", 0, [](const EngineSnapshot& s) { return std::optional(static_cast<double>(s.waiting)); }, Better::Lower},
    {"Preemptions", "", 0, [](const EngineSnapshot& s) { return std::optional(static_cast<double>(s.preemptions)); }, Better::Lower},
    // Each ended request once, by how it ended (engine_snapshot.h): a stopped
    // workload's requests are aborted, not completed. Aborts follow the
    // user's Stop, so they have no better direction.
    {"Requests completed", "", 0,
     [](const EngineSnapshot& s) { return std::optional(static_cast<double>(s.completed_requests)); }, Better::Higher},
    {"Requests aborted", "", 0,
     [](const EngineSnapshot& s) { return std::optional(static_cast<double>(s.aborted_requests)); }, Better::Neither},
    {"Requests failed", "", 0,
     [](const EngineSnapshot& s) { return std::optional(static_cast<double>(s.failed_requests)); }, Better::Lower},
    {"Blocks in use", "%", 1,
     [](const EngineSnapshot& s) { return std::optional(fragmentation(s, &FragmentationStats::block_occupancy)); }, Better::Neither},
    {"Blocks used", "blocks", 0,
     [](const EngineSnapshot& s) { return std::optional(static_cast<double>(s.pool->fragmentation.used_blocks)); }, Better::Lower},
    // What a sequence costs: with sliding windows freed, far fewer blocks.
    {"Blocks used per running sequence", "blocks", 1,
     [](const EngineSnapshot& s) {
         return measured(s.running > 0, static_cast<double>(s.pool->fragmentation.used_blocks) /
                                            static_cast<double>(std::max<std::size_t>(s.running, 1)));
     }, Better::Lower},
    {"Slots holding tokens", "%", 1,
     [](const EngineSnapshot& s) { return std::optional(fragmentation(s, &FragmentationStats::token_occupancy)); }, Better::Higher},
    {"Internal waste", "%", 1,
     [](const EngineSnapshot& s) { return std::optional(fragmentation(s, &FragmentationStats::internal_waste)); }, Better::Lower},
    {"Reserved waste", "%", 1,
     [](const EngineSnapshot& s) { return std::optional(fragmentation(s, &FragmentationStats::reserved_waste)); }, Better::Lower},
    {"External fragmentation", "%", 1,
     [](const EngineSnapshot& s) { return std::optional(fragmentation(s, &FragmentationStats::external_fragmentation)); }, Better::Lower},
    {"TTFT p50 (engine: arrival \u2192 first token)", "ms", 1, [](const EngineSnapshot& s) { return measured(s.ttft.p50_ms > 0, s.ttft.p50_ms); }, Better::Lower},
    {"TTFT p95 (engine: arrival \u2192 first token)", "ms", 1, [](const EngineSnapshot& s) { return measured(s.ttft.p95_ms > 0, s.ttft.p95_ms); }, Better::Lower},
};

const char* const kSettingLabels[ComparePanel::kSettingRows] = {
    QT_TRANSLATE_NOOP("ComparePanel", "KV cache format"),     QT_TRANSLATE_NOOP("ComparePanel", "Tokens per block"),
    QT_TRANSLATE_NOOP("ComparePanel", "Pool (blocks)"),       QT_TRANSLATE_NOOP("ComparePanel", "Pool (MiB)"),
    QT_TRANSLATE_NOOP("ComparePanel", "Allocation"),          QT_TRANSLATE_NOOP("ComparePanel", "When blocks run out"),
    QT_TRANSLATE_NOOP("ComparePanel", "Prefix cache"),        QT_TRANSLATE_NOOP("ComparePanel", "Window layers"),
};

// Blocks the kind of layer titled `title` holds (used, not cached), from
// the pool's lanes; none when the pool has no such kind.
std::optional<double> kindBlocks(const EngineSnapshot& s, const QString& title) {
    if (!s.pool)
        return std::nullopt;
    for (const BlockLane& lane : blockLanes(*s.pool))
        if (!lane.free_pool && QString::fromStdString(lane.kind.title()) == title)
            return static_cast<double>(lane.figures.used_blocks);
    return std::nullopt;
}

QStringList kindTitles(const PoolSnapshot& pool) {
    QStringList titles;
    if (pool.layout.num_groups() > 1)
        for (const KvKind& kind : pool.layout.groups().kinds())
            titles << QString::fromStdString(kind.title());
    return titles;
}

// What a pool's window layers do: free what leaves the window, or keep it
// (--swa-full); empty for a model without windows.
QString windowLayers(const PoolSnapshot& pool) {
    const KvGroups& groups = pool.layout.groups();
    if (!groups.has_windows())
        return {};
    return groups.keeps_whole() ? QObject::tr("kept whole") : QObject::tr("free");
}

QString word(std::string_view text) { return QString::fromUtf8(text.data(), static_cast<qsizetype>(text.size())); }

// The pool as the engine built it (its snapshot), not as the form asked.
double poolMib(const PoolSnapshot& pool) {
    return static_cast<double>(pool.fragmentation.total_blocks * pool.layout.bytes_per_block() +
                               pool.layout.fixed_bytes()) /
           (1024.0 * 1024.0);
}

int widestText(const QFontMetrics& metrics) {
    int widest = 0;
    for (const char* text : kWidestTexts)
        widest = std::max(widest, metrics.horizontalAdvance(QString::fromUtf8(text)));
    return widest;
}

QString header(const QString& label, const char* unit) {
    const QString u = QString::fromLatin1(unit);
    return u.isEmpty() ? label : QStringLiteral("%1 (%2)").arg(label, u);
}

// At the end, wherever the user clicked.
void appendTo(QPlainTextEdit* view, const QString& text) {
    view->moveCursor(QTextCursor::End);
    view->insertPlainText(text);
}

QPlainTextEdit* replyView(const char* name) {
    auto* view = new QPlainTextEdit;
    view->setObjectName(QString::fromLatin1(name));
    view->setReadOnly(true);
    view->setMinimumHeight(60);
    return view;
}

QString idleNote() {
    return QObject::tr("Load a model, choose B's settings and start B: every chat turn and workload then goes to both "
                       "engines. Both share this machine's CPU cores, so each one's speed is lower than alone; every "
                       "figure is measured by its own engine.");
}

} // namespace

std::optional<double> compareFigure(int row, const EngineSnapshot& snapshot) {
    return snapshot.pool ? kRowSpecs[row].value(snapshot) : std::nullopt;
}

ComparePanel::ComparePanel(QWidget* parent)
    : QWidget(parent),
      settings_(new EngineSettingsPanel),
      start_(new QPushButton(tr("Start B"))),
      stop_(new QPushButton(tr("Stop B"))),
      note_(new QLabel),
      mapA_(new LivePoolPanel),
      mapB_(newMapB()),
      mapBBox_(new QGroupBox(tr("B"))),
      table_(new QTableWidget(int{kSettingRows} + int{kRows}, kColumns)),
      replyA_(replyView("replyA")),
      replyB_(replyView("replyB")),
      sideTabs_(new QTabWidget) {
    settings_->setObjectName(QStringLiteral("compareSettings"));
    suggestedB_ = EngineController::defaultConfig();
    suggestedB_.allocation = AllocationMode::Contiguous; // the classic comparison
    settings_->setConfig(suggestedB_);
    start_->setObjectName(QStringLiteral("startCompare"));
    stop_->setObjectName(QStringLiteral("stopCompare"));
    stop_->setEnabled(false);
    // Two buttons side by side: each says which engine it acts on.
    start_->setToolTip(tr("Start engine B beside A with the settings below, on A's model: each chat message then "
                          "runs on both"));
    stop_->setToolTip(tr("Stop engine B; A runs on"));
    settings_->findChild<QPushButton*>(QStringLiteral("applyConfig"))
        ->setToolTip(tr("Rebuild the running engine B with the settings above (before B runs, Start B uses them)"));
    note_->setObjectName(QStringLiteral("compareNote"));
    note_->setWordWrap(true);
    note_->setText(idleNote());
    mapBBox_->setObjectName(QStringLiteral("mapBBox"));

    auto* maps = new QSplitter(Qt::Horizontal);
    auto* mapABox = new QGroupBox(tr("A (the main engine)"));
    (new QVBoxLayout(mapABox))->addWidget(mapA_);
    (new QVBoxLayout(mapBBox_))->addWidget(mapB_);
    maps->addWidget(mapABox);
    maps->addWidget(mapBBox_);
    auto* left = new QVBoxLayout;
    left->addWidget(note_);
    left->addWidget(maps, 1);
    auto* layout = new QHBoxLayout(this);
    layout->addLayout(left, 3);
    layout->addWidget(buildSide(), 2);

    connect(start_, &QPushButton::clicked, this, &ComparePanel::start);
    connect(settings_, &EngineSettingsPanel::applyRequested, this, [this](const EngineConfig& config) {
        if (engineB_)
            engineB_->applyConfig(config);
        else
            settings_->setApplyNote(tr("Start B to run these settings."));
    });
    connect(stop_, &QPushButton::clicked, this, &ComparePanel::stop);
    fillTable();
}

ComparePanel::~ComparePanel() = default;

QWidget* ComparePanel::buildSide() {
    table_->setObjectName(QStringLiteral("compareTable"));
    table_->setHorizontalHeaderLabels({tr("A"), tr("B"), tr("B \u2212 A (\u25b2 B better)")});
    for (int r = 0; r < kSettingRows; ++r)
        table_->setVerticalHeaderItem(r, new QTableWidgetItem(tr(kSettingLabels[r])));
    for (int r = 0; r < kRows; ++r)
        table_->setVerticalHeaderItem(kSettingRows + r,
                                      new QTableWidgetItem(header(tr(kRowSpecs[r].label), kRowSpecs[r].unit)));
    for (int r = 0; r < table_->rowCount(); ++r)
        for (int c = 0; c < kColumns; ++c) {
            auto* item = new QTableWidgetItem;
            item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
            table_->setItem(r, c, item);
        }
    // Whole figures at any window size: no column narrower than the widest
    // text it may hold, and the table never narrower than its columns (the
    // tab scrolls instead).
    QHeaderView* columns = table_->horizontalHeader();
    const int columnWidth = widestText(QFontMetrics(table_->font())) + 2 * kCellPadding;
    columns->setMinimumSectionSize(columnWidth);
    columns->setSectionResizeMode(QHeaderView::Stretch);
    table_->verticalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    table_->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    table_->setMinimumWidth(table_->verticalHeader()->sizeHint().width() + kColumns * columnWidth +
                            2 * table_->frameWidth());
    table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
    table_->setWordWrap(false);

    // Every row shows: the table is as tall as its rows; B's long form
    // scrolls in the room left below it.
    table_->setMinimumHeight(table_->horizontalHeader()->sizeHint().height() + table_->verticalHeader()->length() +
                             2 * table_->frameWidth());
    table_->setVerticalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    auto* form = new QScrollArea;
    form->setWidget(settings_);
    form->setWidgetResizable(true);
    form->setFrameShape(QFrame::NoFrame);
    form->setMinimumHeight(kMinFormHeight);
    sideTabs_->addTab(form, tr("Engine B's settings"));
    sideTabs_->addTab(buildReplies(), tr("Latest reply"));
    auto* buttons = new QHBoxLayout;
    buttons->addWidget(start_);
    buttons->addWidget(stop_);
    auto* side = new QWidget;
    auto* layout = new QVBoxLayout(side);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(table_);
    layout->addLayout(buttons);
    layout->addWidget(sideTabs_, 1);
    return side;
}

QWidget* ComparePanel::buildReplies() {
    auto* box = new QWidget;
    auto* grid = new QHBoxLayout(box);
    for (auto [title, view] : {std::pair{tr("A"), replyA_}, std::pair{tr("B"), replyB_}}) {
        auto* column = new QVBoxLayout;
        column->addWidget(new QLabel(title));
        column->addWidget(view, 1);
        grid->addLayout(column, 1);
    }
    return box;
}

void ComparePanel::setModelSource(const ModelSource& source) {
    // A's model is announced again when only A's configuration changed.
    const bool same = source_ && source_->path == source.path && source_->preset == source.preset;
    source_ = source;
    if (isRunning() && !same)
        engineB_->loadModel(source);
}

void ComparePanel::setModelShape(const ModelShape& shape) {
    settings_->setModelShape(shape);
    modelHasWindows_ = std::any_of(shape.layer_windows.begin(), shape.layer_windows.end(),
                                   [](std::uint32_t window) { return window > 0; });
    suggestB();
}

void ComparePanel::setConfigA(const EngineConfig& config) {
    configA_ = config;
    fillSettings(kA, configA_, lastA_);
    suggestB();
}

// B's untouched form follows the model: for one with sliding windows, A's
// settings with the window layers kept whole; else the classic contiguous
// comparison.
void ComparePanel::suggestB() {
    if (isRunning() || to_json(settings_->config()) != to_json(suggestedB_))
        return; // B runs, or the form is the user's choice
    const bool windowed = modelHasWindows_ || (lastA_ && lastA_->pool && lastA_->pool->layout.groups().has_windows());
    EngineConfig b = windowed && configA_ ? *configA_ : EngineController::defaultConfig();
    if (windowed)
        b.swa_full = true;
    else
        b.allocation = AllocationMode::Contiguous;
    if (to_json(b) == to_json(suggestedB_))
        return;
    suggestedB_ = b;
    settings_->setConfig(b);
}

void ComparePanel::start() {
    if (!source_) {
        emit errorOccurred(tr("Load a model first: engine B runs the same model as A."));
        return;
    }
    stop();
    const EngineConfig config = settings_->config();
    engineB_ = std::make_unique<EngineThread>(config);
    if (models_)
        engineB_->setSharedModels(models_);
    connectB(config);
    engineB_->loadModel(*source_);
    sideTabs_->setCurrentIndex(kRepliesTab); // what B says is what to watch now
    note_->setText(tr("Engine B is loading %1...").arg(source_->label()));
    mapB_->setIdleText(tr("B is loading %1...").arg(source_->label()));
    start_->setEnabled(false);
    stop_->setEnabled(true);
    emit runningChanged(true);
}

// B's map, its replay coloured by B's chats as the live picture is.
LivePoolPanel* ComparePanel::newMapB() {
    auto* map = new LivePoolPanel;
    map->setPaletteMaker([](const EngineSnapshot& s) { return chatPalette(s); });
    // Not "No model loaded": A's model is; B is what has not started.
    map->setIdleText(tr("B is not running: press Start B"));
    return map;
}

void ComparePanel::connectB(const EngineConfig& config) {
    EngineController* c = engineB_->controller();
    connect(c, &EngineController::snapshotReady, this, &ComparePanel::showSnapshotB);
    // The steps B did not publish, for its map's replay (mapB_ is replaced when B stops).
    connect(c, &EngineController::stepsRecorded, this, [this](const SnapshotBatch& steps) { mapB_->addSteps(steps); });
    connect(c, &EngineController::chatText, this, &ComparePanel::appendTextB);
    connect(c, &EngineController::configApplied, this, [this](const EngineConfig& applied) {
        configB_ = applied;
        fillSettings(kB, configB_, lastB_);
    });
    connect(c, &EngineController::configApplied, settings_, &EngineSettingsPanel::setConfig);
    connect(c, &EngineController::errorOccurred, this, &ComparePanel::errorOccurred);
    connect(c, &EngineController::modelLoadFailed, this,
            [this](const QString& m) { emit errorOccurred(tr("Engine B could not load the model: %1").arg(m)); });
    connect(c, &EngineController::modelLoaded, this, [this, config] {
        note_->setText(tr("B runs %1 with its own settings (the table's first rows). Turns and workloads go to both "
                          "engines; they share this machine's CPU cores, so each is slower than alone, and every "
                          "figure is its own engine's measurement.")
                           .arg(source_ ? source_->label() : QString()));
    });
}

void ComparePanel::stop() {
    if (!engineB_)
        return;
    engineB_.reset(); // stops B's thread after its current step
    resetB();
    start_->setEnabled(true);
    stop_->setEnabled(false);
    emit runningChanged(false);
}

// Nothing of a stopped B stays on screen: its header, map, figures and reply.
void ComparePanel::resetB() {
    configB_.reset();
    lastB_.reset();
    note_->setText(idleNote());
    auto* fresh = newMapB();
    delete mapBBox_->layout()->replaceWidget(mapB_, fresh);
    delete mapB_;
    mapB_ = fresh;
    replyB_->clear();
    fillSettings(kB, configB_, lastB_);
    fillTable();
}

void ComparePanel::submitChat(const ChatTurn& turn) {
    latestChat_ = turn.chat;
    replyA_->clear();
    replyB_->clear();
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

void ComparePanel::appendTextA(int chat, const QString& text) {
    if (chat == latestChat_)
        appendTo(replyA_, text);
}

void ComparePanel::appendTextB(int chat, const QString& text) {
    if (chat == latestChat_)
        appendTo(replyB_, text);
}

void ComparePanel::showSnapshotA(std::shared_ptr<const EngineSnapshot> snapshot, const SequencePalette& palette) {
    mapA_->setSnapshot(snapshot, palette);
    const bool newPool = !lastA_ || !snapshot || lastA_->pool != snapshot->pool;
    lastA_ = std::move(snapshot);
    if (newPool) {
        fillSettings(kA, configA_, lastA_);
        suggestB();
    }
    followKinds(lastA_);
    if (isVisible())
        fillTable();
}

void ComparePanel::showSnapshotB(std::shared_ptr<const EngineSnapshot> snapshot) {
    if (!snapshot || !snapshot->pool || !engineB_)
        return;
    mapB_->setSnapshot(snapshot, chatPalette(*snapshot));
    lastB_ = snapshot;
    fillSettings(kB, configB_, lastB_);
    followKinds(lastB_);
    fillTable();
    emit snapshotBShown(std::move(snapshot));
}

void ComparePanel::fillSettings(int column, const std::optional<EngineConfig>& config,
                                const std::shared_ptr<const EngineSnapshot>& snapshot) {
    const auto set = [&](SettingRow row, const QString& text) {
        table_->item(row, column)->setText(text.isEmpty() ? kNoData : text);
    };
    const bool pool = snapshot && snapshot->pool;
    set(KvFormat, pool ? word(to_string(snapshot->pool->layout.dtype())) : QString());
    set(BlockSize, pool ? QString::number(snapshot->pool->layout.block_size()) : QString());
    set(PoolBlocks, pool ? QString::number(snapshot->pool->fragmentation.total_blocks) : QString());
    set(PoolMib, pool ? QString::number(poolMib(*snapshot->pool), 'f', 1) : QString());
    set(Allocation, pool ? word(to_string(snapshot->pool->mode)) : QString());
    set(Preemption, config ? word(to_string(config->preemption)) : QString());
    set(PrefixCache, config ? (config->prefix_caching ? tr("on") : tr("off")) : QString());
    set(WindowLayers, pool ? windowLayers(*snapshot->pool) : QString());
}

// The per-kind rows follow the model's kinds of layer (both engines run
// the same model, so A's or B's pool says which).
void ComparePanel::followKinds(const std::shared_ptr<const EngineSnapshot>& snapshot) {
    if (!snapshot || !snapshot->pool)
        return;
    const QStringList titles = kindTitles(*snapshot->pool);
    if (titles == kinds_)
        return;
    kinds_ = titles;
    const int first = int{kSettingRows} + int{kRows};
    table_->setRowCount(first + static_cast<int>(kinds_.size()));
    for (int k = 0; k < kinds_.size(); ++k) {
        table_->setVerticalHeaderItem(first + k, new QTableWidgetItem(tr("Blocks used: %1").arg(kinds_[k])));
        for (int c = 0; c < kColumns; ++c) {
            auto* item = new QTableWidgetItem;
            item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
            table_->setItem(first + k, c, item);
        }
    }
    table_->setMinimumHeight(table_->horizontalHeader()->sizeHint().height() + table_->verticalHeader()->length() +
                             2 * table_->frameWidth());
}

void ComparePanel::fillKindRows() {
    const int first = int{kSettingRows} + int{kRows};
    for (int k = 0; k < kinds_.size(); ++k) {
        const auto value = [&](const std::shared_ptr<const EngineSnapshot>& s) {
            return s ? kindBlocks(*s, kinds_[k]) : std::nullopt;
        };
        const auto a = value(lastA_);
        const auto b = value(lastB_);
        const auto text = [](std::optional<double> v) { return v ? QString::number(*v, 'f', 0) : kNoData; };
        table_->item(first + k, kA)->setText(text(a));
        table_->item(first + k, kB)->setText(text(b));
        table_->item(first + k, kDifference)->setText(text(a && b ? std::optional(*b - *a) : std::nullopt));
    }
}

QString ComparePanel::kindCell(int kind, int column) const {
    return table_->item(int{kSettingRows} + int{kRows} + kind, column)->text();
}

// " ▲" (B better) or " ▼" (B worse) after a difference that shows at the
// row's precision, by which way the figure is better; nothing otherwise.
// The column's header and the cell's tooltip say it in words.
QString ComparePanel::verdict(int row, std::optional<double> difference) const {
    const RowSpec& spec = kRowSpecs[row];
    const double shown = difference ? std::round(*difference * std::pow(10.0, spec.decimals)) : 0.0;
    QTableWidgetItem* item = table_->item(kSettingRows + row, kDifference);
    if (spec.better == Better::Neither || shown == 0.0) {
        item->setToolTip({});
        return {};
    }
    const bool better = (shown > 0) == (spec.better == Better::Higher);
    const QString direction = spec.better == Better::Higher ? tr("higher is better") : tr("lower is better");
    item->setToolTip((better ? tr("B is better here: %1") : tr("B is worse here: %1")).arg(direction));
    return better ? QStringLiteral(" \u25b2") : QStringLiteral(" \u25bc");
}

void ComparePanel::fillTable() {
    for (int r = 0; r < kRows; ++r) {
        const auto value = [&](const std::shared_ptr<const EngineSnapshot>& s) {
            return s ? compareFigure(r, *s) : std::nullopt;
        };
        const auto a = value(lastA_);
        const auto b = value(lastB_);
        const auto text = [&](std::optional<double> v) {
            return v ? QString::number(*v, 'f', kRowSpecs[r].decimals) : kNoData;
        };
        table_->item(kSettingRows + r, kA)->setText(text(a));
        table_->item(kSettingRows + r, kB)->setText(text(b));
        const std::optional<double> difference = a && b ? std::optional(*b - *a) : std::nullopt;
        table_->item(kSettingRows + r, kDifference)->setText(text(difference) + verdict(r, difference));
    }
    fillKindRows();
}

QString ComparePanel::cell(Row row, int column) const { return table_->item(int{kSettingRows} + row, column)->text(); }

QString ComparePanel::settingCell(SettingRow row, int column) const { return table_->item(row, column)->text(); }

QString ComparePanel::replyText(int side) const { return (side == 0 ? replyA_ : replyB_)->toPlainText(); }

} // namespace kvscope::ui
