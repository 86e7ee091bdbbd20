#include "ui/playground/playground_panel.h"

#include <QComboBox>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QSpinBox>
#include <QSplitter>
#include <QVBoxLayout>

#include "ui/blockmap/block_map_legend.h"
#include "ui/playground/playground_chart.h"
#include "ui/playground/pool_view.h"
#include "ui/blockmap/sequence_palette.h"
#include "ui/look/text_status.h"

namespace kvscope::ui {
namespace {

// Pools stay small enough to click through but may be made large to watch
// the map shrink its cells; both pools' memory is allocated for real.
constexpr int kMaxPoolBlocks = 8192;
constexpr int kMaxBlockSize = 64;
constexpr int kMaxTokens = 100000;

QSpinBox* spinBox(const char* name, int min, int max, int value) {
    auto* box = new QSpinBox;
    box->setObjectName(QLatin1String(name));
    box->setRange(min, max);
    box->setValue(value);
    box->setAccelerated(true);
    return box;
}

QPushButton* button(const char* name, const QString& text, const QString& tip) {
    auto* b = new QPushButton(text);
    b->setObjectName(QLatin1String(name));
    b->setToolTip(tip);
    return b;
}

SequencePalette playgroundPalette() {
    return SequencePalette([](SeqId seq) { return QString::fromStdString(sequence_name(seq)); });
}

std::uint32_t value(const QSpinBox* box) { return static_cast<std::uint32_t>(box->value()); }

} // namespace

PlaygroundPanel::PlaygroundPanel(QWidget* parent)
    : QWidget(parent),
      poolBlocks_(spinBox("poolBlocks", 1, kMaxPoolBlocks, 32)),
      blockSize_(spinBox("blockSize", 1, kMaxBlockSize, 4)),
      promptTokens_(spinBox("promptTokens", 1, kMaxTokens, 10)),
      maxNewTokens_(spinBox("maxNewTokens", 0, kMaxTokens, 6)),
      appendCount_(spinBox("appendCount", 1, kMaxTokens, 1)),
      sequence_(new QComboBox),
      append_(button("append", tr("Append"), tr("Append tokens to the selected sequence, one at a time"))),
      fork_(button("fork", tr("Fork"), tr("A new sequence sharing the selected one's tokens (paged: shares its blocks)"))),
      free_(button("free", tr("Free"), tr("Release the selected sequence's blocks"))),
      lastOperation_(new QLabel),
      paged_(new PoolView(tr("Paged (vLLM)"), tr("one block at a time, anywhere"))),
      contiguous_(new PoolView(tr("Contiguous (pre-vLLM)"), tr("prompt + max new tokens reserved as one run"))),
      chart_(new PlaygroundChart) {
    sequence_->setObjectName(QStringLiteral("sequence"));
    sequence_->setMinimumContentsLength(4);
    lastOperation_->setObjectName(QStringLiteral("lastOperation"));
    paged_->setObjectName(QStringLiteral("pagedPool"));
    contiguous_->setObjectName(QStringLiteral("contiguousPool"));
    paged_->setSequencePalette(playgroundPalette());
    contiguous_->setSequencePalette(playgroundPalette());

    auto* hint = new QLabel(
        tr("Every operation goes to both pools. Contiguous allocation reserves prompt + max new tokens up front "
           "as one run of consecutive blocks; paged allocation takes a block at a time as tokens arrive, anywhere "
           "in the pool. Hover a block for its details."));
    hint->setWordWrap(true);
    hint->setForegroundRole(QPalette::PlaceholderText); // dimmed, in the light and the dark theme

    auto* layout = new QVBoxLayout(this);
    layout->addWidget(buildPoolControls());
    layout->addWidget(buildSequenceControls());
    layout->addWidget(hint);
    layout->addWidget(lastOperation_);
    layout->addWidget(buildPools(), 1);
    layout->addWidget(new BlockMapLegend);
    refresh();
}

QWidget* PlaygroundPanel::buildPoolControls() {
    auto* box = new QGroupBox(tr("Pools"));
    auto* row = new QHBoxLayout(box);
    auto* resetButton = button("reset", tr("Reset"), tr("Empty both pools with this size"));
    auto* abcButton = button("abcScenario", tr("A/B/C example"),
                             tr("6 blocks: A takes 2, B takes 1, A is freed, C needs 4. Contiguous finds 5 free "
                                "blocks but no run of 4; paged takes any 4."));
    auto* parallelButton = button("parallelScenario", tr("Parallel sampling"),
                                  tr("24 blocks: A (10 + 8 tokens) forked into B and C, then 6 tokens each. Paged "
                                     "samples share the prompt's blocks; contiguous ones copy everything."));
    row->addWidget(poolBlocks_);
    row->addWidget(new QLabel(tr("blocks of")));
    row->addWidget(blockSize_);
    row->addWidget(new QLabel(tr("tokens")));
    row->addWidget(resetButton);
    row->addSpacing(16);
    row->addWidget(abcButton);
    row->addWidget(parallelButton);
    row->addStretch(1);
    connect(resetButton, &QPushButton::clicked, this, &PlaygroundPanel::reset);
    connect(abcButton, &QPushButton::clicked, this, [this] { runScenario(Scenario::Abc); });
    connect(parallelButton, &QPushButton::clicked, this, [this] { runScenario(Scenario::ParallelSampling); });
    return box;
}

QWidget* PlaygroundPanel::buildSequenceControls() {
    auto* box = new QGroupBox(tr("Sequences"));
    auto* addButton = button("addSequence", tr("Add sequence"),
                             tr("A new sequence with this prompt; contiguous also reserves its max new tokens"));
    // Adding and acting on a sequence on rows of their own: one row would
    // not fit a 1024-pixel window.
    auto* add = new QHBoxLayout;
    add->addWidget(promptTokens_);
    add->addWidget(new QLabel(tr("prompt tokens, up to")));
    add->addWidget(maxNewTokens_);
    add->addWidget(new QLabel(tr("new")));
    add->addWidget(addButton);
    add->addStretch(1);
    auto* act = new QHBoxLayout;
    act->addWidget(new QLabel(tr("Sequence")));
    act->addWidget(sequence_);
    act->addWidget(append_);
    act->addWidget(appendCount_);
    act->addWidget(new QLabel(tr("tokens")));
    act->addWidget(fork_);
    act->addWidget(free_);
    act->addStretch(1);
    auto* rows = new QVBoxLayout(box);
    rows->addLayout(add);
    rows->addLayout(act);
    connect(addButton, &QPushButton::clicked, this, &PlaygroundPanel::addSequence);
    connect(append_, &QPushButton::clicked, this, &PlaygroundPanel::appendTokens);
    connect(fork_, &QPushButton::clicked, this, &PlaygroundPanel::forkSequence);
    connect(free_, &QPushButton::clicked, this, &PlaygroundPanel::freeSequence);
    return box;
}

QWidget* PlaygroundPanel::buildPools() {
    auto* pools = new QWidget;
    auto* row = new QHBoxLayout(pools);
    row->setContentsMargins(0, 0, 0, 0);
    row->setSpacing(16);
    row->addWidget(paged_, 1);
    row->addWidget(contiguous_, 1);
    auto* splitter = new QSplitter(Qt::Vertical);
    splitter->addWidget(pools);
    splitter->addWidget(chart_);
    splitter->setStretchFactor(0, 3);
    splitter->setStretchFactor(1, 1);
    splitter->setChildrenCollapsible(false);
    return splitter;
}

PoolView* PlaygroundPanel::view(PoolSide side) const { return side == PoolSide::Paged ? paged_ : contiguous_; }

void PlaygroundPanel::runScenario(Scenario scenario) {
    model_.run_scenario(scenario);
    poolBlocks_->setValue(static_cast<int>(model_.config().num_blocks));
    blockSize_->setValue(static_cast<int>(model_.config().block_size));
    refresh();
}

void PlaygroundPanel::reset() {
    try {
        model_.reset({.num_blocks = value(poolBlocks_), .block_size = value(blockSize_)});
    } catch (const Error& e) {
        lastOperation_->setText(tr("Reset refused: %1").arg(QString::fromUtf8(e.what())));
        setTextStatus(*lastOperation_, TextStatus::Error);
        return;
    }
    refresh();
}

void PlaygroundPanel::addSequence() { refresh(model_.add_sequence(value(promptTokens_), value(maxNewTokens_))); }

void PlaygroundPanel::appendTokens() {
    if (const auto seq = selectedSequence()) {
        model_.append_tokens(*seq, value(appendCount_));
        refresh(seq);
    }
}

void PlaygroundPanel::forkSequence() {
    if (const auto seq = selectedSequence())
        refresh(model_.fork(*seq));
}

void PlaygroundPanel::freeSequence() {
    if (const auto seq = selectedSequence()) {
        model_.free(*seq);
        refresh();
    }
}

std::optional<SeqId> PlaygroundPanel::selectedSequence() const {
    if (sequence_->currentIndex() < 0)
        return std::nullopt;
    return sequence_->currentData().value<qulonglong>();
}

// Everything shown comes from the model's snapshots, rebuilt after each
// operation: the views keep no state of their own.
void PlaygroundPanel::refresh(std::optional<SeqId> select) {
    for (PoolSide side : kPoolSides)
        view(side)->display(model_.snapshot(side), model_.outcome(side));
    const QString operation = QString::fromStdString(model_.last_operation());
    lastOperation_->setText(tr("Last operation: <b>%1</b>").arg(operation.toHtmlEscaped()));
    setTextStatus(*lastOperation_, std::nullopt);
    refreshSequences(select);
    chart_->setHistory(model_.history());
    emit operationApplied(operation);
}

void PlaygroundPanel::refreshSequences(std::optional<SeqId> select) {
    const auto keep = select ? select : selectedSequence();
    sequence_->clear();
    for (SeqId seq : model_.live_sequences())
        sequence_->addItem(QString::fromStdString(sequence_name(seq)), QVariant::fromValue<qulonglong>(seq));
    if (keep) {
        const int index = sequence_->findData(QVariant::fromValue<qulonglong>(*keep));
        if (index >= 0)
            sequence_->setCurrentIndex(index);
    }
    const bool any = sequence_->count() > 0;
    for (QPushButton* b : {append_, fork_, free_})
        b->setEnabled(any);
}

} // namespace kvscope::ui
