#include "ui/playground/pool_view.h"

#include <QGridLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QVBoxLayout>

#include "ui/blockmap/block_map_widget.h"
#include "ui/blockmap/sequence_palette.h"
#include "ui/look/text_status.h"

namespace kvscope::ui {
namespace {

constexpr int kFigureColumns = 2; // label/value pairs per grid row

QString percent(double ratio) { return QStringLiteral("%1 %").arg(ratio * 100.0, 0, 'f', 1); }

QString slotText(std::size_t n) { return n == 1 ? QStringLiteral("1 slot") : QStringLiteral("%1 slots").arg(n); }

QString blockText(std::size_t n) { return n == 1 ? QStringLiteral("1 block") : QStringLiteral("%1 blocks").arg(n); }

QString externalText(const FragmentationStats& s) {
    QString text = QStringLiteral("%1 (%2)").arg(percent(s.external_fragmentation()), blockText(s.external_blocks));
    if (s.pending_request_blocks > 0 && s.external_blocks > 0)
        text += QStringLiteral(" in runs shorter than %1").arg(s.pending_request_blocks);
    return text;
}

// Refused in the error colour, done in the success one, not held muted.
TextStatus outcomeStatus(OpOutcome::Kind kind) {
    switch (kind) {
    case OpOutcome::Kind::Refused: return TextStatus::Error;
    case OpOutcome::Kind::NotHeld: return TextStatus::Muted;
    case OpOutcome::Kind::Done: break;
    }
    return TextStatus::Success;
}

QString outcomeName(OpOutcome::Kind kind) {
    switch (kind) {
    case OpOutcome::Kind::Refused: return QStringLiteral("refused");
    case OpOutcome::Kind::NotHeld: return QStringLiteral("not-held");
    case OpOutcome::Kind::Done: break;
    }
    return QStringLiteral("done");
}

} // namespace

PoolView::PoolView(const QString& title, const QString& subtitle, QWidget* parent)
    : QWidget(parent), map_(new BlockMapWidget), outcome_(new QLabel), grid_(new QGridLayout) {
    auto* heading = new QLabel(QStringLiteral("<b>%1</b>").arg(title.toHtmlEscaped()));
    auto* description = new QLabel(subtitle); // quieter than the heading, in either theme
    setTextStatus(*description, TextStatus::Muted);
    outcome_->setObjectName(QStringLiteral("outcome"));
    outcome_->setWordWrap(true);
    // Two lines always, so both maps start at the same height.
    outcome_->setAlignment(Qt::AlignLeft | Qt::AlignTop);
    outcome_->setMinimumHeight(2 * outcome_->fontMetrics().lineSpacing());
    outcome_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    grid_->setHorizontalSpacing(10);
    grid_->setVerticalSpacing(2);
    addFigure(QStringLiteral("tokenOccupancy"), tr("Token occupancy"), tr("Slots holding a token, of all slots"));
    addFigure(QStringLiteral("blockOccupancy"), tr("Block occupancy"), tr("Blocks with a holder, of all blocks"));
    addFigure(QStringLiteral("internalWaste"), tr("Internal waste"),
              tr("Empty slots in blocks that hold at least one token (each sequence's last block)"));
    addFigure(QStringLiteral("reservedWaste"), tr("Reserved waste"),
              tr("Slots reserved for tokens not generated yet (contiguous mode)"));
    addFigure(QStringLiteral("externalFragmentation"), tr("External fragmentation"),
              tr("Free blocks that cannot serve the pending request because they lie in holes that are too short"));
    addFigure(QStringLiteral("largestFreeRun"), tr("Largest free run"), tr("Most consecutive free blocks"));
    addFigure(QStringLiteral("freeBlocks"), tr("Free blocks"), tr("Blocks without a holder, cached-free included"));
    addFigure(QStringLiteral("sequences"), tr("Sequences"), tr("Sequences this pool holds"));

    auto* column = new QVBoxLayout(this);
    column->setContentsMargins(0, 0, 0, 0);
    // The map goes last: it takes whatever height is left.
    auto* headingRow = new QHBoxLayout;
    headingRow->addWidget(heading);
    headingRow->addSpacing(8);
    headingRow->addWidget(description);
    headingRow->addStretch(1);
    column->addLayout(headingRow);
    column->addWidget(outcome_);
    column->addLayout(grid_);
    column->addWidget(map_, 1);
}

void PoolView::addFigure(const QString& key, const QString& label, const QString& tip) {
    const int index = static_cast<int>(figures_.size());
    const int row = index / kFigureColumns;
    const int column = 2 * (index % kFigureColumns);
    auto* name = new QLabel(label + QLatin1Char(':'));
    auto* value = new QLabel;
    value->setObjectName(key);
    value->setWordWrap(true); // two pools side by side in a 1024-pixel window
    name->setToolTip(tip);
    value->setToolTip(tip);
    grid_->addWidget(name, row, column);
    grid_->addWidget(value, row, column + 1);
    grid_->setColumnStretch(column + 1, 1);
    figures_.insert(key, value);
}

void PoolView::display(std::shared_ptr<const PoolSnapshot> snapshot, const OpOutcome& outcome) {
    showFigures(*snapshot);
    showOutcome(outcome);
    map_->setSnapshot(std::move(snapshot));
}

void PoolView::setSequencePalette(const SequencePalette& palette) { map_->setSequencePalette(palette); }

QString PoolView::figure(const QString& key) const {
    const QLabel* label = figures_.value(key);
    return label ? label->text() : QString();
}

void PoolView::showFigures(const PoolSnapshot& snapshot) {
    const FragmentationStats& s = snapshot.fragmentation;
    const auto set = [this](const char* key, const QString& text) { figures_.value(QLatin1String(key))->setText(text); };
    set("tokenOccupancy", QStringLiteral("%1 (%2 of %3)").arg(percent(s.token_occupancy())).arg(s.token_slots).arg(slotText(s.total_slots())));
    set("blockOccupancy", QStringLiteral("%1 (%2 of %3)").arg(percent(s.block_occupancy())).arg(s.used_blocks).arg(blockText(s.total_blocks)));
    set("internalWaste", QStringLiteral("%1 (%2)").arg(percent(s.internal_waste()), slotText(s.internal_waste_slots)));
    set("reservedWaste", QStringLiteral("%1 (%2)").arg(percent(s.reserved_waste()), slotText(s.reserved_waste_slots)));
    set("externalFragmentation", externalText(s));
    set("largestFreeRun", blockText(s.largest_free_run));
    set("freeBlocks", QStringLiteral("%1 (%2 cached)").arg(s.free_blocks).arg(s.cached_free_blocks));
    set("sequences", QString::number(snapshot.sequences.size()));
}

void PoolView::showOutcome(const OpOutcome& outcome) {
    outcome_->setText(QString::fromStdString(outcome.message));
    setTextStatus(*outcome_, outcomeStatus(outcome.kind));
    outcome_->setProperty("outcome", outcomeName(outcome.kind));
}

} // namespace kvscope::ui
