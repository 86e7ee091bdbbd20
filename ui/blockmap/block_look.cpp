#include "ui/blockmap/block_look.h"

#include <algorithm>
#include <array>

namespace kvscope::ui {
namespace {

QRgb mix(QRgb color, QRgb toward, int percent) {
    const auto channel = [percent](int a, int b) { return a + (b - a) * percent / 100; };
    return qRgb(channel(qRed(color), qRed(toward)), channel(qGreen(color), qGreen(toward)),
                channel(qBlue(color), qBlue(toward)));
}

// Shared hatching gets denser as cells shrink so a few pixels still show it.
int hatch_period(int size) {
    if (size >= 8)
        return 4;
    return size >= 4 ? 3 : 2;
}

} // namespace

namespace block_colors {
QRgb empty_slots(QRgb owner) { return mix(owner, 0xFFFFFFFF, 70); }
QRgb shared_hatch(QRgb owner) { return mix(owner, 0xFF000000, 45); }
QRgb reserved_inside(QRgb owner) { return mix(owner, 0xFFFFFFFF, 88); }
QRgb cached_from(QRgb chat) { return mix(chat, kCachedFree, 50); }
} // namespace block_colors

CellPainter::CellPainter(QImage& image)
    : pixels_(reinterpret_cast<QRgb*>(image.bits())),
      stride_(image.bytesPerLine() / static_cast<qsizetype>(sizeof(QRgb))),
      bounds_(image.rect()) {}

void CellPainter::paint(const QRect& cell, const CellLook& look) {
    const QRect clipped = cell & bounds_;
    if (clipped.isEmpty())
        return;
    switch (look.state) {
    case BlockState::Free: fill_rect(clipped, block_colors::kFree); break;
    case BlockState::Used: fill_rows(clipped, look, 0); break;
    case BlockState::Shared: fill_rows(clipped, look, hatch_period(clipped.width())); break;
    case BlockState::Reserved: paint_reserved(clipped, shades(look.owner)); break;
    case BlockState::CachedFree: paint_cached_free(clipped, look.owner); break;
    }
    if (look.window_mark > 0.0)
        blend(clipped, block_colors::kLeftWindow, std::min(look.window_mark, 1.0));
}

namespace {

// Splits `size` px between parts in proportion, in order; a part that is
// there gets at least 1 px while there is room, taken from the largest.
std::array<int, 4> split_pixels(const std::array<double, 4>& parts, int size) {
    double sum = 0;
    for (double p : parts)
        sum += p;
    std::array<int, 4> px{};
    if (sum <= 0.0 || size <= 0)
        return px;
    int used = 0;
    for (std::size_t i = 0; i < parts.size(); ++i) {
        px[i] = static_cast<int>(parts[i] / sum * size + 0.5);
        if (parts[i] > 0.0)
            px[i] = std::max(px[i], 1);
        used += px[i];
    }
    while (used != size) { // rounding and the 1-px minimums: settle on the largest part
        const auto largest = static_cast<std::size_t>(std::max_element(px.begin(), px.end()) - px.begin());
        const int step = used > size ? -1 : 1;
        if (step < 0 && px[largest] <= 1)
            break; // more parts than pixels: the last ones are cut
        px[largest] += step;
        used += step;
    }
    return px;
}

} // namespace

void CellPainter::paintRun(const QRect& cell, const RunLook& look, bool across) {
    const QRect clipped = cell & bounds_;
    if (clipped.isEmpty())
        return;
    const Shades& s = shades(look.owner);
    const std::array<QRgb, 4> colors{s.owner, s.empty, block_colors::kCachedFree, block_colors::kFree};
    const int size = across ? cell.width() : cell.height();
    const std::array<int, 4> px = split_pixels({look.filled, look.waste, look.cached, look.free}, size);
    int offset = 0;
    for (std::size_t i = 0; i < px.size() && offset < size; ++i) {
        const int n = std::min(px[i], size - offset);
        const QRect part = across ? QRect(cell.left() + offset, cell.top(), n, cell.height())
                                  : QRect(cell.left(), cell.bottom() + 1 - offset - n, cell.width(), n);
        fill_rect(part & bounds_, colors[i]);
        offset += n;
    }
    if (look.window_mark > 0.0)
        blend(clipped, block_colors::kLeftWindow, std::min(look.window_mark, 1.0));
}

// Over the look already painted, so the state (the cached dot) still shows
// through a fading mark.
void CellPainter::blend(const QRect& rect, QRgb toward, double strength) {
    constexpr double kStrongest = 80; // percent: the state underneath still shows
    const int percent = static_cast<int>(strength * kStrongest + 0.5);
    for (int y = rect.top(); y <= rect.bottom(); ++y) {
        QRgb* line = row(y);
        for (int x = rect.left(); x <= rect.right(); ++x)
            line[x] = mix(line[x], toward, percent);
    }
}

// Used and Shared: owner colour below the fill line, tint above; Shared adds
// hatching on every `hatch_period`-th diagonal.
void CellPainter::fill_rows(const QRect& cell, const CellLook& look, int period) {
    const int size = cell.height();
    const double fill = std::clamp(look.fill, 0.0, 1.0);
    int filled = static_cast<int>(fill * size + 0.5);
    if (fill > 0.0)
        filled = std::max(filled, 1); // one token must show
    const Shades& s = shades(look.owner);
    const QRgb hatch = s.hatch;
    for (int y = 0; y < size; ++y) {
        const QRgb base = y >= size - filled ? s.owner : s.empty;
        QRgb* line = row(cell.top() + y) + cell.left();
        for (int x = 0; x < cell.width(); ++x)
            line[x] = period && (x + y) % period == 0 ? hatch : base;
    }
}

void CellPainter::paint_reserved(const QRect& cell, const Shades& s) {
    if (cell.width() < 4 || cell.height() < 4) {
        fill_rect(cell, s.empty);
        return;
    }
    fill_rect(cell, s.owner);
    fill_rect(cell.adjusted(1, 1, -1, -1), s.inside);
}

const CellPainter::Shades& CellPainter::shades(QRgb owner) {
    if (!haveShades_ || shades_.owner != owner) {
        shades_ = {owner, block_colors::empty_slots(owner), block_colors::shared_hatch(owner),
                   block_colors::reserved_inside(owner)};
        haveShades_ = true;
    }
    return shades_;
}

void CellPainter::paint_cached_free(const QRect& cell, QRgb from) {
    fill_rect(cell, from ? block_colors::cached_from(from) : block_colors::kCachedFree);
    const int size = std::min(cell.width(), cell.height());
    if (size < 5)
        return;
    const int dot = std::max(1, size / 3);
    const QPoint corner = cell.topLeft() + QPoint((cell.width() - dot) / 2, (cell.height() - dot) / 2);
    fill_rect(QRect(corner, QSize(dot, dot)), block_colors::kCachedMark);
}

void CellPainter::fill_rect(const QRect& rect, QRgb color) {
    for (int y = rect.top(); y <= rect.bottom(); ++y)
        std::fill_n(row(y) + rect.left(), rect.width(), color);
}

QString block_state_name(BlockState state) {
    switch (state) {
    case BlockState::Free: return QStringLiteral("Free");
    case BlockState::Used: return QStringLiteral("Used");
    case BlockState::Shared: return QStringLiteral("Shared");
    case BlockState::Reserved: return QStringLiteral("Reserved");
    case BlockState::CachedFree: return QStringLiteral("Cached free");
    }
    return QStringLiteral("Unknown");
}

} // namespace kvscope::ui
