#include "ui/blockmap/block_map_widget.h"

#include <algorithm>
#include <optional>
#include <unordered_map>
#include <utility>

#include <QHelpEvent>
#include <QMouseEvent>
#include <QPainter>
#include <QStringList>
#include <QToolTip>

#include "ui/blockmap/block_look.h"

namespace kvscope::ui {
namespace {

constexpr int kHintPitch = 28;
constexpr int kHintColumns = 16;
constexpr int kFadeFrameMs = 40; // 25 repaints a second while a window mark fades
constexpr int kTitlePadding = 4;  // a lane title's line: the text and this much below it

QString stateLine(BlockState state) {
    switch (state) {
    case BlockState::Reserved: return QStringLiteral("Reserved: held, not yet written");
    case BlockState::CachedFree:
        return QStringLiteral("Cached free: no holder, content kept for prefix reuse until evicted");
    case BlockState::Shared: return QStringLiteral("Shared: held by more than one sequence");
    default: return block_state_name(state);
    }
}

// The colour of each block's CellLook: its first owner's, or for a cached
// block the chat it came from. Colours are looked up once per sequence, not
// per block (the palette may compute them), and neighbouring blocks mostly
// share an owner.
class CellColors {
public:
    CellColors(const PoolSnapshot& snapshot, const SequencePalette& palette) : snapshot_(snapshot), palette_(palette) {
        for (const SequenceInfo& seq : snapshot.sequences)
            owners_.emplace(seq.id, palette.color(seq.id));
    }

    QRgb of(const BlockInfo& info) {
        if (info.state == BlockState::CachedFree)
            return info.last_holder ? cachedFrom(*info.last_holder) : 0;
        if (info.owner_count == 0)
            return block_colors::kFree;
        const SeqId seq = snapshot_.owners[info.owner_begin];
        if (!last_ || last_->first != seq) {
            const auto it = owners_.find(seq);
            last_.emplace(seq, it != owners_.end() ? it->second : palette_.color(seq));
        }
        return last_->second;
    }

private:
    // 0 (plain cached grey) unless the palette attributes the block to a chat.
    QRgb cachedFrom(SeqId seq) {
        const auto [it, fresh] = cached_.try_emplace(seq, 0);
        if (fresh && !palette_.cachedFrom(seq).isEmpty())
            it->second = palette_.color(seq);
        return it->second;
    }

    const PoolSnapshot& snapshot_;
    const SequencePalette& palette_;
    std::unordered_map<SeqId, QRgb> owners_, cached_;
    std::optional<std::pair<SeqId, QRgb>> last_;
};

} // namespace

QString counted(std::size_t n, const char* one, const char* many) {
    return QStringLiteral("%1 %2").arg(n).arg(QString::fromLatin1(n == 1 ? one : many));
}

BlockMapWidget::BlockMapWidget(QWidget* parent) : QWidget(parent) {
    setMouseTracking(true);
    setAttribute(Qt::WA_OpaquePaintEvent); // the cell image covers every pixel
    setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Expanding);
    fadeTimer_.setInterval(kFadeFrameMs);
    connect(&fadeTimer_, &QTimer::timeout, this, &BlockMapWidget::fadeTick);
}

void BlockMapWidget::setSnapshot(std::shared_ptr<const PoolSnapshot> snapshot) {
    const std::size_t blocksBefore = blockCount();
    snapshot_ = std::move(snapshot);
    if (hovered_ && *hovered_ >= blockCount())
        hovered_.reset();
    lanes_ = snapshot_ ? blockLanes(*snapshot_) : std::vector<BlockLane>();
    order_.clear();
    slots_.assign(lanes_.empty() ? 0 : blockCount(), 0);
    for (const BlockLane& lane : lanes_)
        for (BlockId b : lane.blocks) {
            slots_[b] = order_.size();
            order_.push_back(b);
        }
    cellsSize_ = QSize(); // the lanes' sizes may have changed
    invalidate();
    // The size hint follows the pool size; asking for a new layout at every
    // snapshot would lay out the whole window ~30 times a second.
    if (blockCount() != blocksBefore)
        updateGeometry();
}

void BlockMapWidget::setEmptyText(const QString& text) {
    emptyText_ = text;
    update();
}

void BlockMapWidget::setSequencePalette(SequencePalette palette) {
    palette_ = std::move(palette);
    invalidate();
}

void BlockMapWidget::setWindowFade(WindowFade fade, double atS, bool advancing) {
    fade_ = std::move(fade);
    fadeAtS_ = atS;
    fadeAdvancing_ = advancing;
    fadeClock_.start();
    if (advancing && fade_.fading(atS))
        fadeTimer_.start();
    else
        fadeTimer_.stop();
    invalidate();
}

double BlockMapWidget::fadeNow() const {
    return fadeAtS_ + (fadeAdvancing_ ? static_cast<double>(fadeClock_.elapsed()) / 1000.0 : 0.0);
}

void BlockMapWidget::fadeTick() {
    if (!fade_.fading(fadeNow()))
        fadeTimer_.stop(); // this last repaint clears the marks
    invalidate();
}

double BlockMapWidget::windowMark(BlockId block) const { return fade_.strength(block, fadeNow()); }

const BlockMapLayout& BlockMapWidget::cells() const {
    if (cellsSize_ != size() || cells_.blocks != blockCount()) {
        if (lanes_.empty()) {
            cells_ = BlockMapLayout::fit(size(), blockCount());
        } else {
            std::vector<std::size_t> sizes;
            for (const BlockLane& lane : lanes_)
                sizes.push_back(lane.blocks.size());
            cells_ = BlockMapLayout::fit(size(), sizes, fontMetrics().height() + kTitlePadding);
        }
        cellsSize_ = size();
    }
    return cells_;
}

std::optional<BlockId> BlockMapWidget::blockAt(QPoint point) const {
    const auto slot = cells().blockAt(point);
    if (!slot)
        return std::nullopt;
    return lanes_.empty() ? static_cast<BlockId>(*slot) : order_[*slot];
}

QRect BlockMapWidget::blockRect(BlockId block) const {
    if (block >= blockCount())
        return {};
    return cells().cellRect(lanes_.empty() ? block : slots_[block]);
}

QString BlockMapWidget::laneTitle(std::size_t lane) const {
    if (lane >= lanes_.size())
        return {};
    const BlockLane& l = lanes_[lane];
    if (l.free_pool)
        return tr("Free pool, shared by every group \u00b7 %1 empty; the cached blocks in the lanes above are free "
                  "to take too")
            .arg(counted(l.blocks.size(), "block", "blocks"));
    QString title = QString::fromStdString(l.kind.title());
    if (l.kind.window > 0 && snapshot_->layout.groups().keeps_whole())
        title += tr(", kept whole (--swa-full)");
    title += QStringLiteral(" (%1): ").arg(counted(l.kind.groups.size(), "group", "groups"));
    title += tr("%1 used, %2 cached").arg(l.figures.used_blocks).arg(l.figures.cached_free_blocks);
    if (l.left_window > 0)
        title += tr(", %1 freed by the window").arg(l.left_window);
    return title;
}

// "Group 3 of 13 · sliding window 512 · freed by the window": which table
// took the block last, for a pool with lanes.
QString BlockMapWidget::groupLine(const BlockInfo& info) const {
    const KvGroups& groups = snapshot_->layout.groups();
    if (info.state == BlockState::Free && !info.left_window)
        return tr("Free pool: any group may take it");
    if (info.group >= groups.size())
        return {};
    const std::uint32_t window = groups[info.group].window;
    QString line = tr("Group %1 of %2 \u00b7 %3")
                       .arg(info.group + 1)
                       .arg(groups.size())
                       .arg(window == 0 ? tr("full attention") : tr("sliding window %1").arg(window));
    if (window > 0 && groups.keeps_whole())
        line += tr(" (kept whole)");
    if (info.left_window)
        line += tr(" \u00b7 freed by the window");
    return line;
}

QString BlockMapWidget::toolTipFor(BlockId block) const {
    if (block >= blockCount())
        return {};
    const BlockInfo& info = snapshot_->blocks[block];
    const QString from = info.last_holder ? palette_.cachedFrom(*info.last_holder) : QString();
    QStringList lines;
    lines << QStringLiteral("Block %1 · %2")
                 .arg(block)
                 .arg(from.isEmpty() ? block_state_name(info.state) : QStringLiteral("cached, from %1").arg(from));
    if (info.state != BlockState::Used && info.state != BlockState::Free)
        lines << stateLine(info.state);
    QStringList owners;
    for (SeqId seq : snapshot_->owners_of(block))
        owners << palette_.name(seq);
    if (!owners.isEmpty())
        lines << (owners.size() == 1 ? QStringLiteral("Owner: ") : QStringLiteral("Owners: ")) +
                     owners.join(QStringLiteral(", "));
    if (!lanes_.empty())
        if (const QString group = groupLine(info); !group.isEmpty())
            lines << group;
    lines << QStringLiteral("Ref count: %1").arg(info.ref_count);
    lines << QStringLiteral("Fill: %1 / %2 slots").arg(info.fill).arg(snapshot_->layout.block_size());
    lines << QStringLiteral("KV dtype: %1 · %2 bytes per block")
                 .arg(QString::fromStdString(std::string(to_string(snapshot_->layout.dtype()))))
                 .arg(snapshot_->layout.bytes_per_block());
    return lines.join(QLatin1Char('\n'));
}

QSize BlockMapWidget::sizeHint() const {
    const auto blocks = static_cast<int>(std::min<std::size_t>(blockCount(), 4096));
    const int columns = std::clamp(blocks, 1, kHintColumns);
    const int rows = std::max(1, (blocks + columns - 1) / columns);
    const int margin = 2 * BlockMapLayout::kMargin;
    return QSize(columns * kHintPitch + margin, rows * kHintPitch + margin).expandedTo(minimumSizeHint()).boundedTo({640, 420});
}

QSize BlockMapWidget::minimumSizeHint() const { return {160, 60}; }

bool BlockMapWidget::event(QEvent* event) {
    if (event->type() != QEvent::ToolTip)
        return QWidget::event(event);
    const auto* help = static_cast<QHelpEvent*>(event);
    if (const auto block = blockAt(help->pos()))
        QToolTip::showText(help->globalPos(), toolTipFor(*block), this, blockRect(*block));
    else
        QToolTip::hideText();
    return true;
}

void BlockMapWidget::paintEvent(QPaintEvent*) {
    if (dirty_ || image_.size() != size())
        renderCells();
    QPainter painter(this);
    painter.drawImage(0, 0, image_);
    paintLaneTitles(painter);
    if (hovered_) {
        painter.setPen(QPen(palette().color(QPalette::Text), 1));
        painter.drawRect(blockRect(*hovered_).adjusted(-1, -1, 0, 0));
    }
    paintNotes(painter);
}

void BlockMapWidget::resizeEvent(QResizeEvent*) { invalidate(); }

void BlockMapWidget::mouseMoveEvent(QMouseEvent* event) { setHovered(blockAt(event->position().toPoint())); }

void BlockMapWidget::leaveEvent(QEvent*) { setHovered(std::nullopt); }

void BlockMapWidget::invalidate() {
    dirty_ = true;
    update();
}

void BlockMapWidget::renderCells() {
    if (image_.size() != size())
        image_ = QImage(size(), QImage::Format_RGB32);
    // A panel in the palette's base colour just behind the cells: a small
    // pool should not look like a large empty one.
    image_.fill(palette().color(QPalette::Window));
    dirty_ = false;
    if (!snapshot_ || image_.isNull())
        return;
    const QSize grid = cells().gridSize();
    QPainter(&image_).fillRect(QRect(0, 0, grid.width() + 2 * BlockMapLayout::kMargin,
                                     grid.height() + 2 * BlockMapLayout::kMargin),
                               palette().color(QPalette::Base));
    const double blockSize = snapshot_->layout.block_size();
    CellColors colors(*snapshot_, palette_);
    CellPainter cellPainter(image_);
    const double now = fadeNow();
    cells().forEachCell([&](std::size_t slot, const QRect& rect) {
        const BlockId b = lanes_.empty() ? static_cast<BlockId>(slot) : order_[slot];
        const BlockInfo& info = snapshot_->blocks[b];
        cellPainter.paint(rect, {info.state, colors.of(info), info.fill / blockSize,
                                 info.left_window ? fade_.strength(b, now) : 0.0});
    });
}

void BlockMapWidget::paintLaneTitles(QPainter& painter) {
    if (lanes_.empty())
        return;
    painter.setPen(palette().color(QPalette::Text));
    const BlockMapLayout& grid = cells();
    for (std::size_t i = 0; i < lanes_.size(); ++i) {
        const QRect title = grid.titleRect(i).adjusted(0, 0, 0, -kTitlePadding);
        if (title.top() < height())
            painter.drawText(title.adjusted(0, 0, std::max(0, width() - title.right()), 0),
                             Qt::AlignLeft | Qt::AlignVCenter | Qt::TextSingleLine,
                             fontMetrics().elidedText(laneTitle(i), Qt::ElideRight, width() - title.left()));
    }
}

void BlockMapWidget::setHovered(std::optional<BlockId> block) {
    if (block == hovered_)
        return;
    hovered_ = block;
    update();
}

void BlockMapWidget::paintNotes(QPainter& painter) {
    painter.setPen(palette().color(QPalette::Text));
    if (!snapshot_) {
        painter.drawText(rect(), Qt::AlignCenter, emptyText_.isEmpty() ? tr("No pool") : emptyText_);
        return;
    }
    const BlockMapLayout& grid = cells();
    if (grid.visible < grid.blocks)
        painter.drawText(rect().adjusted(4, 4, -4, -4), Qt::AlignBottom | Qt::AlignRight,
                         tr("showing %1 of %2 blocks: enlarge the window").arg(grid.visible).arg(grid.blocks));
}

} // namespace kvscope::ui
