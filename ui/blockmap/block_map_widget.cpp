#include "ui/blockmap/block_map_widget.h"

#include <algorithm>
#include <optional>
#include <unordered_map>
#include <utility>

#include <QHelpEvent>
#include <QKeyEvent>
#include <QLocale>
#include <QWheelEvent>
#include <QMouseEvent>
#include <QPainter>
#include <QStringList>
#include <QToolTip>


namespace kvscope::ui {
namespace {

constexpr int kHintPitch = 28;
constexpr int kHintColumns = 16;
constexpr int kFadeFrameMs = 40; // 25 repaints a second while a window mark fades
constexpr int kTitlePadding = 4;  // a lane title's line: the text and this much below it
constexpr int kMinimapGap = 4;    // between the cells and the minimap
constexpr int kWheelNotch = 120;  // QWheelEvent's eighths of a degree per notch: one zoom step

QString thousands(std::size_t n) { return QLocale(QLocale::English).toString(static_cast<qulonglong>(n)); }

QString stateLine(BlockState state) {
    switch (state) {
    case BlockState::Reserved: return QStringLiteral("Reserved: held, not yet written");
    case BlockState::CachedFree:
        return QStringLiteral("Cached free: no holder, content kept for prefix reuse until evicted");
    case BlockState::Shared: return QStringLiteral("Shared: held by more than one sequence");
    default: return block_state_name(state);
    }
}

bool held(BlockState state) {
    return state == BlockState::Used || state == BlockState::Shared || state == BlockState::Reserved;
}

} // namespace

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
        return owner(snapshot_.owners[info.owner_begin]);
    }

    QRgb owner(SeqId seq) {
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

namespace {

// Counts a run of blocks into its look: each part in blocks, the colour of
// the sequence holding most of them (by first owner).
class RunCounter {
public:
    RunCounter(const PoolSnapshot& pool, const WindowFade& fade, double now)
        : pool_(pool), fade_(fade), now_(now), blockSize_(pool.layout.block_size()) {}

    void add(BlockId b) {
        const BlockInfo& info = pool_.blocks[b];
        switch (info.state) {
        case BlockState::Free: look_.free += 1; break;
        case BlockState::CachedFree: look_.cached += 1; break;
        case BlockState::Reserved: look_.waste += 1; break;
        case BlockState::Used:
        case BlockState::Shared:
            look_.filled += info.fill / blockSize_;
            look_.waste += 1.0 - info.fill / blockSize_;
            break;
        }
        if (held(info.state) && info.owner_count > 0)
            countHolder(pool_.owners[info.owner_begin]);
        if (info.left_window)
            look_.window_mark = std::max(look_.window_mark, fade_.strength(b, now_));
    }

    RunLook finish(CellColors& colors) {
        if (!holders_.empty())
            look_.owner = colors.owner(std::max_element(holders_.begin(), holders_.end(), [](const auto& a, const auto& b) {
                                           return a.second < b.second;
                                       })->first);
        RunLook done = look_;
        look_ = {};
        holders_.clear();
        return done;
    }

private:
    void countHolder(SeqId seq) {
        for (auto& [s, n] : holders_)
            if (s == seq) {
                ++n;
                return;
            }
        holders_.emplace_back(seq, 1);
    }

    const PoolSnapshot& pool_;
    const WindowFade& fade_;
    double now_;
    double blockSize_;
    RunLook look_;
    std::vector<std::pair<SeqId, std::size_t>> holders_; // few per run: a vector beats a map
};

} // namespace

QString counted(std::size_t n, const char* one, const char* many) {
    return QStringLiteral("%1 %2").arg(n).arg(QString::fromLatin1(n == 1 ? one : many));
}

BlockMapWidget::BlockMapWidget(QWidget* parent) : QWidget(parent) {
    setMouseTracking(true);
    setFocusPolicy(Qt::ClickFocus); // + - 0 and the arrow keys once clicked
    setAttribute(Qt::WA_OpaquePaintEvent); // the cell image covers every pixel
    setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Expanding);
    fadeTimer_.setInterval(kFadeFrameMs);
    connect(&fadeTimer_, &QTimer::timeout, this, &BlockMapWidget::fadeTick);
}

void BlockMapWidget::setSnapshot(std::shared_ptr<const PoolSnapshot> snapshot) {
    const std::size_t blocksBefore = blockCount();
    snapshot_ = std::move(snapshot);
    lanes_ = snapshot_ ? blockLanes(*snapshot_) : std::vector<BlockLane>();
    order_.clear();
    slots_.assign(lanes_.empty() ? 0 : blockCount(), 0);
    for (const BlockLane& lane : lanes_)
        for (BlockId b : lane.blocks) {
            slots_[b] = order_.size();
            order_.push_back(b);
        }
    const bool newPool = blockCount() != blocksBefore;
    if (newPool) { // another pool: zoom and scroll meant the old one
        zoomStep_ = 0;
        scroll_ = 0;
        hovered_.reset();
    }
    relayout(); // the lanes' sizes may have changed
    if (hovered_ && *hovered_ >= cells().cellCount())
        hovered_.reset();
    invalidate();
    // The size hint follows the pool size; asking for a new layout at every
    // snapshot would lay out the whole window ~30 times a second.
    if (newPool) {
        updateGeometry();
        emit viewChanged();
    }
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

std::vector<std::size_t> BlockMapWidget::laneSizes() const {
    if (lanes_.empty())
        return {blockCount()};
    std::vector<std::size_t> sizes;
    for (const BlockLane& lane : lanes_)
        sizes.push_back(lane.blocks.size());
    return sizes;
}

// The zoom step's scale over `area`; while it does not show all, the
// minimap takes a strip at the right and the cells the rest.
BlockMapLayout BlockMapWidget::layoutFor(QSize area, std::size_t step, int scroll) const {
    const std::vector<std::size_t> sizes = laneSizes();
    const int titleHeight = lanes_.empty() ? 0 : fontMetrics().height() + kTitlePadding;
    const BlockMapLayout fitted = BlockMapLayout::fit(area, sizes, titleHeight);
    const std::vector<Scale> steps = BlockMapLayout::zoomSteps(fitted.scale);
    const Scale scale = steps[std::min(step, steps.size() - 1)];
    BlockMapLayout l = BlockMapLayout::at(area, sizes, titleHeight, scale, scroll);
    if (!l.showsAll())
        l = BlockMapLayout::at(area - QSize(kMinimapWidth + kMinimapGap, 0), sizes, titleHeight, scale, scroll);
    return l;
}

const BlockMapLayout& BlockMapWidget::cells() const {
    if (!cells_)
        cells_ = layoutFor(size(), zoomStep_, scroll_);
    return *cells_;
}

void BlockMapWidget::relayout() { cells_.reset(); }

bool BlockMapWidget::canZoomIn() const {
    if (blockCount() == 0)
        return false;
    const BlockMapLayout fitted = layoutFor(size(), 0, 0);
    return zoomStep_ + 1 < BlockMapLayout::zoomSteps(fitted.scale).size();
}

void BlockMapWidget::zoomIn() {
    if (canZoomIn())
        zoomTo(zoomStep_ + 1, rect().center());
}

void BlockMapWidget::zoomOut() {
    if (zoomStep_ > 0)
        zoomTo(zoomStep_ - 1, rect().center());
}

void BlockMapWidget::zoomToFit() {
    if (zoomStep_ > 0)
        zoomTo(0, rect().center());
}

// The slot under `point`: where across its cell, how far into its run.
std::optional<std::size_t> BlockMapWidget::slotAt(QPoint point) const {
    const auto cell = cells().cellAt(point);
    if (!cell)
        return std::nullopt;
    const Run run = cells().run(*cell);
    const QRect rect = cells().cellRect(*cell);
    const auto into = static_cast<std::size_t>(std::max(point.x() - rect.left(), 0)) * run.count /
                      static_cast<std::size_t>(std::max(rect.width(), 1));
    return run.first + std::min(into, run.count - 1);
}

// Zooms so that the block under `anchor` stays at its height (rows wrap at
// another width, so it moves sideways); the middle of what is in view when
// the anchor is on no cell. While the wheel turns with the cursor still,
// every step keeps the block the first one found: not the one that moved
// under the cursor.
void BlockMapWidget::zoomTo(std::size_t step, QPoint anchor) {
    if (blockCount() == 0)
        return;
    std::size_t slot = 0;
    if (wheelAnchor_ && wheelAnchor_->first == anchor) {
        slot = wheelAnchor_->second;
    } else if (const auto under = slotAt(anchor)) {
        slot = *under;
    } else {
        const Run view = cells().slotsInView();
        slot = view.first + view.count / 2;
        anchor.setY(height() / 2);
    }
    zoomStep_ = step;
    scroll_ = 0;
    relayout();
    scroll_ = cells().slotRect(slot).center().y() - anchor.y();
    relayout();
    scroll_ = cells().scroll; // clamped
    hovered_.reset();
    invalidate();
    emit viewChanged();
}

void BlockMapWidget::scrollTo(int scroll) {
    if (!snapshot_)
        return;
    const int before = cells().scroll;
    scroll_ = scroll;
    relayout();
    scroll_ = cells().scroll;
    if (scroll_ == before)
        return;
    hovered_.reset();
    invalidate();
    emit viewChanged();
}

// Scrolls so that slot's cell is at y in the widget.
void BlockMapWidget::scrollToSlot(std::size_t slot, int y) {
    scrollTo(cells().scroll + cells().slotRect(slot).center().y() - y);
}

QString BlockMapWidget::scaleText() const {
    if (blockCount() == 0)
        return {};
    const BlockMapLayout& l = cells();
    const QString scale = l.scale.perCell == 1 ? tr("1 cell = 1 block") : tr("1 cell = %1 blocks").arg(thousands(l.scale.perCell));
    if (l.showsAll())
        return tr("%1 · all %2 blocks").arg(scale, thousands(l.blocks));
    return tr("%1 · %2 of %3 blocks in view").arg(scale, thousands(l.slotsInView().count), thousands(l.blocks));
}

QRect BlockMapWidget::minimapRect() const {
    if (blockCount() == 0 || cells().showsAll())
        return {};
    const int m = BlockMapLayout::kMargin;
    return {width() - kMinimapWidth, m, kMinimapWidth - m, height() - 2 * m};
}

std::vector<BlockId> BlockMapWidget::blocksAt(QPoint point) const {
    const auto cell = cells().cellAt(point);
    if (!cell)
        return {};
    const Run run = cells().run(*cell);
    std::vector<BlockId> blocks;
    blocks.reserve(run.count);
    for (std::size_t slot = run.first; slot < run.first + run.count; ++slot)
        blocks.push_back(blockOfSlot(slot));
    std::sort(blocks.begin(), blocks.end());
    return blocks;
}

std::optional<BlockId> BlockMapWidget::blockAt(QPoint point) const {
    const auto cell = cells().cellAt(point);
    if (!cell || cells().run(*cell).count != 1)
        return std::nullopt;
    return blockOfSlot(cells().run(*cell).first);
}

QRect BlockMapWidget::blockRect(BlockId block) const {
    if (block >= blockCount())
        return {};
    return cells().slotRect(lanes_.empty() ? block : slots_[block]);
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

QString BlockMapWidget::toolTipAt(QPoint point) const {
    const std::vector<BlockId> blocks = blocksAt(point);
    if (blocks.size() == 1)
        return toolTipFor(blocks.front());
    return blocks.empty() ? QString() : runToolTip(blocks);
}

// "Blocks 12,288–12,351: 40 used by 7 requests, 24 cached": what a cell
// holding a run of blocks holds, in the words of a single block's tooltip.
QString BlockMapWidget::runToolTip(const std::vector<BlockId>& blocks) const {
    if (blocks.empty() || !snapshot_)
        return {};
    std::size_t used = 0, shared = 0, reserved = 0, cached = 0, free = 0, tokens = 0, leftWindow = 0;
    std::vector<SeqId> holders;
    for (BlockId b : blocks) {
        const BlockInfo& info = snapshot_->blocks[b];
        used += info.state == BlockState::Used || info.state == BlockState::Shared ? 1 : 0;
        shared += info.state == BlockState::Shared ? 1 : 0;
        reserved += info.state == BlockState::Reserved ? 1 : 0;
        cached += info.state == BlockState::CachedFree ? 1 : 0;
        free += info.state == BlockState::Free ? 1 : 0;
        leftWindow += info.left_window ? 1 : 0;
        if (held(info.state))
            tokens += info.fill;
        for (SeqId seq : snapshot_->owners_of(b))
            holders.push_back(seq);
    }
    std::sort(holders.begin(), holders.end());
    holders.erase(std::unique(holders.begin(), holders.end()), holders.end());
    QStringList parts;
    if (used > 0)
        parts << tr("%1 used by %2").arg(thousands(used), counted(holders.size(), "request", "requests"));
    if (reserved > 0)
        parts << tr("%1 reserved").arg(thousands(reserved));
    parts << tr("%1 cached").arg(thousands(cached)) << tr("%1 free").arg(thousands(free));
    const QString range = QStringLiteral("%1–%2").arg(thousands(blocks.front()), thousands(blocks.back()));
    QStringList lines;
    if (lanes_.empty()) {
        lines << tr("Blocks %1: %2").arg(range, parts.join(QStringLiteral(", ")));
    } else {
        const BlockLane& lane = lanes_[cells().laneOfSlot(slots_[blocks.front()])];
        const QString where = lane.free_pool ? tr("the free pool") : QString::fromStdString(lane.kind.title());
        lines << tr("%1 blocks of %2 (ids %3): %4")
                     .arg(thousands(blocks.size()), where, range, parts.join(QStringLiteral(", ")));
    }
    const std::size_t heldBlocks = used + reserved;
    if (heldBlocks > 0) {
        const std::size_t capacity = heldBlocks * snapshot_->layout.block_size();
        lines << tr("Tokens: %1 in the held blocks' %2 slots (%3 empty: internal and reserved waste)")
                     .arg(thousands(tokens), thousands(capacity), thousands(capacity - tokens));
    }
    if (shared > 0)
        lines << tr("%1 of the used blocks shared by more than one sequence").arg(thousands(shared));
    if (leftWindow > 0)
        lines << tr("%1 freed by the window").arg(thousands(leftWindow));
    lines << tr("1 cell = %1 blocks here: zoom in (wheel, +) to see each one").arg(thousands(blocks.size()));
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
    const auto cell = cells().cellAt(help->pos());
    if (const QString text = toolTipAt(help->pos()); cell && !text.isEmpty())
        QToolTip::showText(help->globalPos(), text, this, cells().cellRect(*cell));
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
        painter.drawRect(cells().cellRect(*hovered_).adjusted(-1, -1, 0, 0));
    }
    paintMinimapFrame(painter);
    paintNotes(painter);
}

void BlockMapWidget::resizeEvent(QResizeEvent*) {
    relayout();
    hovered_.reset();
    invalidate();
    emit viewChanged();
}

void BlockMapWidget::mousePressEvent(QMouseEvent* event) {
    if (event->button() != Qt::LeftButton)
        return QWidget::mousePressEvent(event);
    const QPoint pos = event->position().toPoint();
    if (minimapRect().contains(pos)) {
        draggingMinimap_ = true;
        mouseMoveEvent(event);
    } else if (!cells().showsAll()) {
        dragFrom_ = pos;
        dragScroll_ = cells().scroll;
        setCursor(Qt::ClosedHandCursor);
    }
}

void BlockMapWidget::mouseMoveEvent(QMouseEvent* event) {
    const QPoint pos = event->position().toPoint();
    if (draggingMinimap_) { // the minimap's rows stand for the slots in order
        const QRect map = minimapRect();
        const auto y = static_cast<std::size_t>(std::clamp(pos.y() - map.top(), 0, std::max(map.height() - 1, 0)));
        scrollToSlot(std::min(y * blockCount() / static_cast<std::size_t>(std::max(map.height(), 1)), blockCount() - 1),
                     height() / 2);
    } else if (dragFrom_) {
        scrollTo(dragScroll_ - (pos.y() - dragFrom_->y()));
    } else {
        wheelAnchor_.reset(); // the cursor moved: the next wheel zooms around what is under it now
        setHovered(cells().cellAt(pos));
    }
}

void BlockMapWidget::mouseReleaseEvent(QMouseEvent*) {
    draggingMinimap_ = false;
    dragFrom_.reset();
    unsetCursor();
}

void BlockMapWidget::wheelEvent(QWheelEvent* event) {
    if (blockCount() == 0)
        return QWidget::wheelEvent(event);
    // Touchpads send small deltas: a step per notch's worth, summed.
    wheelDelta_ += event->angleDelta().y();
    const QPoint at = event->position().toPoint();
    if (!wheelAnchor_ || wheelAnchor_->first != at) {
        if (const auto slot = slotAt(at))
            wheelAnchor_.emplace(at, *slot);
        else
            wheelAnchor_.reset();
    }
    for (; wheelDelta_ >= kWheelNotch; wheelDelta_ -= kWheelNotch)
        if (canZoomIn())
            zoomTo(zoomStep_ + 1, at);
    for (; wheelDelta_ <= -kWheelNotch; wheelDelta_ += kWheelNotch)
        if (zoomStep_ > 0)
            zoomTo(zoomStep_ - 1, at);
    event->accept();
}

void BlockMapWidget::keyPressEvent(QKeyEvent* event) {
    const int page = std::max(cells().scale.pitch, height() - 2 * cells().scale.pitch);
    switch (event->key()) {
    case Qt::Key_Plus:
    case Qt::Key_Equal: zoomIn(); break;
    case Qt::Key_Minus: zoomOut(); break;
    case Qt::Key_0: zoomToFit(); break;
    case Qt::Key_Up: scrollTo(cells().scroll - cells().scale.pitch); break;
    case Qt::Key_Down: scrollTo(cells().scroll + cells().scale.pitch); break;
    case Qt::Key_PageUp: scrollTo(cells().scroll - page); break;
    case Qt::Key_PageDown: scrollTo(cells().scroll + page); break;
    case Qt::Key_Home: scrollTo(0); break;
    case Qt::Key_End: scrollTo(cells().maxScroll()); break;
    default: QWidget::keyPressEvent(event);
    }
}

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
    const BlockMapLayout& grid = cells();
    const QSize size = grid.gridSize();
    QPainter(&image_).fillRect(QRect(0, -grid.scroll, size.width() + 2 * BlockMapLayout::kMargin,
                                     size.height() + 2 * BlockMapLayout::kMargin),
                               palette().color(QPalette::Base));
    CellColors colors(*snapshot_, palette_);
    CellPainter cellPainter(image_);
    const double now = fadeNow();
    if (grid.scale.perCell == 1) {
        const double blockSize = snapshot_->layout.block_size();
        grid.forEachCell([&](std::size_t, Run run, const QRect& rect) {
            const BlockId b = blockOfSlot(run.first);
            const BlockInfo& info = snapshot_->blocks[b];
            cellPainter.paint(rect, {info.state, colors.of(info), info.fill / blockSize,
                                     info.left_window ? fade_.strength(b, now) : 0.0});
        });
    } else {
        RunCounter counter(*snapshot_, fade_, now);
        grid.forEachCell([&](std::size_t, Run run, const QRect& rect) {
            for (std::size_t slot = run.first; slot < run.first + run.count; ++slot)
                counter.add(blockOfSlot(slot));
            cellPainter.paintRun(rect, counter.finish(colors));
        });
    }
    renderMinimap(cellPainter, colors, now);
}

// The whole pool, top to bottom in slot order, a row of pixels per stretch
// of slots showing its mix across.
void BlockMapWidget::renderMinimap(CellPainter& cellPainter, CellColors& colors, double now) {
    const QRect map = minimapRect();
    if (map.isEmpty())
        return;
    RunCounter counter(*snapshot_, fade_, now);
    const auto rows = static_cast<std::size_t>(map.height());
    const std::size_t blocks = blockCount();
    for (std::size_t y = 0; y < rows; ++y) {
        const std::size_t first = y * blocks / rows;
        const std::size_t end = std::max(first + 1, (y + 1) * blocks / rows);
        for (std::size_t slot = first; slot < end; ++slot)
            counter.add(blockOfSlot(slot));
        cellPainter.paintRun(QRect(map.left(), map.top() + static_cast<int>(y), map.width(), 1), counter.finish(colors),
                             true);
    }
}

// What is in view, framed on the minimap.
void BlockMapWidget::paintMinimapFrame(QPainter& painter) {
    const QRect map = minimapRect();
    if (map.isEmpty())
        return;
    const Run view = cells().slotsInView();
    const double perRow = static_cast<double>(map.height()) / static_cast<double>(blockCount());
    const int top = map.top() + static_cast<int>(static_cast<double>(view.first) * perRow);
    const int rows = std::max(3, static_cast<int>(static_cast<double>(view.count) * perRow + 0.5));
    painter.setPen(QPen(palette().color(QPalette::Highlight), 2));
    painter.setBrush(Qt::NoBrush);
    painter.drawRect(QRect(map.left(), top, map.width(), std::min(rows, map.bottom() - top + 1)).adjusted(0, 0, -1, -1));
}

void BlockMapWidget::paintLaneTitles(QPainter& painter) {
    if (lanes_.empty())
        return;
    painter.setPen(palette().color(QPalette::Text));
    const BlockMapLayout& grid = cells();
    const int right = width() - (minimapRect().isEmpty() ? 0 : kMinimapWidth + kMinimapGap);
    for (std::size_t i = 0; i < lanes_.size(); ++i) {
        const QRect title = grid.titleRect(i).adjusted(0, 0, 0, -kTitlePadding);
        if (title.bottom() >= 0 && title.top() < height())
            painter.drawText(QRect(title.left(), title.top(), right - title.left(), title.height()),
                             Qt::AlignLeft | Qt::AlignVCenter | Qt::TextSingleLine,
                             fontMetrics().elidedText(laneTitle(i), Qt::ElideRight, right - title.left()));
    }
}

void BlockMapWidget::setHovered(std::optional<std::size_t> cell) {
    if (cell == hovered_)
        return;
    hovered_ = cell;
    update();
}

void BlockMapWidget::paintNotes(QPainter& painter) {
    if (snapshot_)
        return;
    painter.setPen(palette().color(QPalette::Text));
    painter.drawText(rect(), Qt::AlignCenter, emptyText_.isEmpty() ? tr("No pool") : emptyText_);
}

} // namespace kvscope::ui
