#pragma once

#include <QImage>
#include <QRect>
#include <QString>
#include <QtGui/qrgb.h>

#include "engine/kv/pool_snapshot_types.h"

namespace kvscope::ui {

// How each block state looks, defined once so the block map, its legend and
// the tests agree:
//   Free        pale grey
//   Used        owner colour filled from the bottom in proportion to
//               fill / block_size, a pale tint of it above (empty slots)
//   Shared      as Used, with dark diagonal hatching
//   Reserved    hollow: owner-coloured outline around a near-white tint
//   CachedFree  mid grey with a white dot (content kept until evicted); a
//               block a chat left in the prefix cache is a muted version of
//               the chat's colour, with the same dot
//   freed by the window (a Free or CachedFree block a sliding window just
//               let go of): its look blended toward a vivid magenta, far
//               from every (muted) sequence colour, up to 80% by the mark's
//               strength (1 just freed, fading to 0; window_fade.h)
// Cells under 4-5 px drop the outline and the dot but keep distinct colours.
//
// A cell holding a run of blocks (a pool too large for one cell per block,
// block_map_layout.h) shows the run's mix as a stacked fill from the bottom,
// in proportion to blocks (RunLook): the slots holding tokens in the owner
// colour of the run's majority holder, the empty slots of held blocks and
// reserved blocks in its pale tint (waste), cached blocks in the cached
// grey, free blocks in the free grey on top. A part that is there gets at
// least a pixel: one used block in a run of 64 must still show.
// These are data colours, the same on light and dark palettes; what lies
// around the cells (background, text, hover outline) follows the palette.
namespace block_colors {
inline constexpr QRgb kFree = 0xFFE3E6EB;
inline constexpr QRgb kCachedFree = 0xFF8E959E;
inline constexpr QRgb kCachedMark = 0xFFFFFFFF;
inline constexpr QRgb kLeftWindow = 0xFFF01FC8;

QRgb empty_slots(QRgb owner);   // Used/Shared above the fill line
QRgb shared_hatch(QRgb owner);  // Shared's diagonal lines
QRgb reserved_inside(QRgb owner);
QRgb cached_from(QRgb chat);    // CachedFree from a chat: its colour, muted toward the cached grey
} // namespace block_colors

struct CellLook {
    BlockState state = BlockState::Free;
    // Colour of the block's first owner; for CachedFree, of the chat that
    // left it in the cache (0: plain cached grey). Unused for Free.
    QRgb owner = 0;
    double fill = 0.0; // filled slots / block size, 0..1
    double window_mark = 0.0; // freed by the window: 0 none .. 1 just freed
};

// A run's mix, in blocks (the parts add up to the run's length).
struct RunLook {
    QRgb owner = 0;      // the majority holder's colour (unused without held blocks)
    double filled = 0;   // token slots held / block size
    double waste = 0;    // held blocks' empty slots and reserved blocks, in blocks
    double cached = 0;
    double free = 0;
    double window_mark = 0.0; // the strongest mark of its blocks
};

// Paints cells by writing a 32-bit image's pixels directly: one QPainter
// call per block would be far too slow for 65,536 blocks.
class CellPainter {
public:
    explicit CellPainter(QImage& image); // Format_RGB32 or Format_ARGB32(_Premultiplied)
    void paint(const QRect& cell, const CellLook& look);
    // Stacked from the bottom, or from the left when `across` (a minimap's row).
    void paintRun(const QRect& cell, const RunLook& look, bool across = false);

private:
    // An owner's derived colours, kept for the next cell: runs of blocks
    // usually belong to one sequence.
    struct Shades {
        QRgb owner = 0, empty = 0, hatch = 0, inside = 0;
    };
    const Shades& shades(QRgb owner);
    void fill_rows(const QRect& cell, const CellLook& look, int hatch_period);
    void paint_reserved(const QRect& cell, const Shades& s);
    void paint_cached_free(const QRect& cell, QRgb from);
    void fill_rect(const QRect& rect, QRgb color);
    void blend(const QRect& rect, QRgb toward, double strength);
    QRgb* row(int y) { return pixels_ + y * stride_; }

    QRgb* pixels_;
    qsizetype stride_; // in pixels
    QRect bounds_;
    Shades shades_;
    bool haveShades_ = false;
};

QString block_state_name(BlockState state); // "Free", "Used", "Shared", "Reserved", "Cached free"

} // namespace kvscope::ui
