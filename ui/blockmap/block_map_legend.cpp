#include "ui/blockmap/block_map_legend.h"

#include <algorithm>

#include <QHelpEvent>
#include <QPainter>
#include <QResizeEvent>
#include <QToolTip>

namespace kvscope::ui {
namespace {

constexpr int kSwatch = 18;
constexpr int kTextGap = 4;   // swatch to its name
constexpr int kEntryGap = 16; // between entries on a row
constexpr int kRowGap = 4;
constexpr QRgb kSampleOwner = 0xFF4E79A7; // the first sequence colour, Chat 1's
constexpr double kSampleMark = 0.8;        // a window mark a moment after the block was freed

QImage swatch(const CellLook& look, const std::optional<RunLook>& run, QColor background) {
    QImage image(kSwatch, kSwatch, QImage::Format_RGB32);
    image.fill(background);
    if (run)
        CellPainter(image).paintRun(image.rect(), *run);
    else
        CellPainter(image).paint(image.rect(), look);
    return image;
}

} // namespace

BlockMapLegend::BlockMapLegend(QWidget* parent) : QWidget(parent) {
    QSizePolicy policy(QSizePolicy::Preferred, QSizePolicy::Preferred);
    policy.setHeightForWidth(true);
    setSizePolicy(policy);
    rebuild();
}

void BlockMapLegend::setShowsWindow(bool shows) {
    if (shows == showsWindow_)
        return;
    showsWindow_ = shows;
    rebuild();
}

void BlockMapLegend::setRunLength(std::size_t perCell) {
    if (perCell == runLength_)
        return;
    runLength_ = perCell;
    rebuild();
}

void BlockMapLegend::rebuild() {
    entries_ = {
        {{BlockState::Free, 0, 0.0}, tr("Free"), tr("No holder, nothing kept")},
        {{BlockState::Used, kSampleOwner, 0.6}, tr("Used (fill from the bottom)"),
         tr("One sequence holds it; the solid part is the share of slots holding tokens")},
        {{BlockState::Shared, kSampleOwner, 1.0}, tr("Shared"),
         tr("Held by several sequences (fork or prefix-cache hit); coloured as its first owner")},
        {{BlockState::Reserved, kSampleOwner, 0.0}, tr("Reserved (not yet written)"),
         tr("Contiguous mode: reserved up front for tokens that may never come")},
        {{BlockState::CachedFree, 0, 1.0}, tr("Cached free"),
         tr("No holder, but its full content stays in the prefix cache until evicted")},
        {{BlockState::CachedFree, kSampleOwner, 1.0}, tr("Cached, from a chat"),
         tr("A chat's ended turn left it in the prefix cache: the chat's colour, muted; a later turn of the "
            "conversation reuses it. Hover a block to see which chat")},
    };
    if (showsWindow_)
        entries_.push_back({{BlockState::CachedFree, 0, 1.0, kSampleMark}, tr("Freed by the window"),
                            tr("A sliding-window group let it go: every token in it is further back than the "
                               "window. Marked for a moment after it was freed; a full block stays in the prefix "
                               "cache. Hover a block to see its group and window")});
    if (runLength_ > 1)
        entries_.push_back({{}, tr("A cell of %1 blocks: their mix").arg(runLength_),
                            tr("The pool has more blocks than fit at a readable size, so each cell holds a run "
                               "of blocks and stacks their share from the bottom: tokens (the colour of the run's "
                               "main holder), empty slots of held blocks (its pale tint: waste), cached, free. "
                               "Hover a cell for its run; zoom in (wheel, +) to see each block"),
                            RunLook{kSampleOwner, 0.35, 0.15, 0.2, 0.3}});
    updateGeometry();
    setMinimumHeight(heightForWidth(width()));
    update();
}

int BlockMapLegend::entryWidth(const Entry& entry) const {
    return kSwatch + kTextGap + fontMetrics().horizontalAdvance(entry.text);
}

int BlockMapLegend::rowHeight() const { return std::max(kSwatch, fontMetrics().height()); }

std::vector<QRect> BlockMapLegend::layoutAt(int width) const {
    std::vector<QRect> rects;
    QPoint at(0, 0);
    for (const Entry& e : entries_) {
        const int w = entryWidth(e);
        if (at.x() > 0 && at.x() + w > width)
            at = QPoint(0, at.y() + rowHeight() + kRowGap);
        rects.emplace_back(at, QSize(w, rowHeight()));
        at.rx() += w + kEntryGap;
    }
    return rects;
}

int BlockMapLegend::heightForWidth(int width) const { return layoutAt(width).back().bottom() + 1; }

void BlockMapLegend::resizeEvent(QResizeEvent* event) {
    QWidget::resizeEvent(event);
    // A layout in a short window gives less than heightForWidth asks; a
    // minimum height for the width it got keeps every row in view.
    setMinimumHeight(heightForWidth(width()));
}

QSize BlockMapLegend::sizeHint() const {
    const QRect last = layoutAt(QWIDGETSIZE_MAX).back();
    return {last.right() + 1, rowHeight()};
}

QSize BlockMapLegend::minimumSizeHint() const {
    int widest = 0;
    for (const Entry& e : entries_)
        widest = std::max(widest, entryWidth(e));
    return {widest, rowHeight()};
}

bool BlockMapLegend::event(QEvent* event) {
    if (event->type() != QEvent::ToolTip)
        return QWidget::event(event);
    const auto* help = static_cast<QHelpEvent*>(event);
    const std::vector<QRect> rects = layoutAt(width());
    for (std::size_t i = 0; i < rects.size(); ++i)
        if (rects[i].contains(help->pos())) {
            QToolTip::showText(help->globalPos(), entries_[i].tip, this, rects[i]);
            return true;
        }
    QToolTip::hideText();
    return true;
}

void BlockMapLegend::paintEvent(QPaintEvent*) {
    QPainter painter(this);
    painter.setPen(palette().color(QPalette::WindowText));
    const std::vector<QRect> rects = layoutAt(width());
    for (std::size_t i = 0; i < rects.size(); ++i) {
        const QRect& r = rects[i];
        painter.drawImage(r.left(), r.top() + (r.height() - kSwatch) / 2,
                          swatch(entries_[i].look, entries_[i].run, palette().color(QPalette::Base)));
        painter.drawText(r.adjusted(kSwatch + kTextGap, 0, 0, 0), Qt::AlignLeft | Qt::AlignVCenter,
                         entries_[i].text);
    }
}

} // namespace kvscope::ui
