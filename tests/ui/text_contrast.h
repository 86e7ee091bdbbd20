// tests/ui: the contrast of text as it was rendered (test_theme_contrast):
// the WCAG 2 contrast ratio between a text's colour and its background,
// both read from the pixels of a grabbed image, per word.
#pragma once

#include <algorithm>
#include <cmath>
#include <optional>
#include <unordered_map>
#include <vector>

#include <QColor>
#include <QImage>
#include <QRect>
#include <QString>

#include "ui/look/text_status.h" // relativeLuminance, contrastRatio, kReadableContrast

namespace kvscope::ui::test {

// WCAG 1.4.11's minimum for graphics that carry meaning (a status dot).
inline constexpr double kSymbolContrast = 3.0;

// The word in a rectangle of rendered text that falls furthest under its
// minimum contrast (kReadableContrast for text, kSymbolContrast for a
// symbol), or else the lowest-contrast word.
struct TextContrast {
    QColor text;
    QColor background;
    QRect word; // where, in the image
    double ratio = 1;
    double wanted = kReadableContrast;
    bool readable() const { return ratio >= wanted; }
};

namespace detail {

// A pixel differs from the background enough to be part of a glyph
// (anti-aliased edges included).
inline bool isInk(QRgb pixel, QRgb background) {
    return std::max({std::abs(qRed(pixel) - qRed(background)), std::abs(qGreen(pixel) - qGreen(background)),
                     std::abs(qBlue(pixel) - qBlue(background))}) > 24;
}

// Runs of indices where `has` is true, split by more than `gap` false ones.
template <typename Has> std::vector<std::pair<int, int>> runs(int begin, int end, int gap, Has has) {
    std::vector<std::pair<int, int>> out;
    int start = -1, lastInk = -1;
    for (int i = begin; i < end; ++i) {
        if (!has(i))
            continue;
        if (start >= 0 && i - lastInk - 1 > gap) {
            out.emplace_back(start, lastInk + 1);
            start = -1;
        }
        if (start < 0)
            start = i;
        lastInk = i;
    }
    if (start >= 0)
        out.emplace_back(start, lastInk + 1);
    return out;
}

// A filled blob about as wide as tall (●, ■): a symbol, not letters,
// which leave most of their box blank.
inline bool isSymbol(const QImage& image, const QRect& box, QRgb background) {
    const double aspect = static_cast<double>(box.width()) / box.height();
    if (aspect < 0.6 || aspect > 1.6)
        return false;
    int ink = 0;
    for (int y = box.top(); y <= box.bottom(); ++y)
        for (int x = box.left(); x <= box.right(); ++x)
            ink += isInk(image.pixel(x, y), background);
    return ink >= 0.6 * box.width() * box.height();
}

// The colour farthest in luminance from `background` inside `box`.
inline QColor farthest(const QImage& image, const QRect& box, const QColor& background) {
    const double lb = relativeLuminance(background);
    QColor best = background;
    double distance = -1;
    for (int y = box.top(); y <= box.bottom(); ++y)
        for (int x = box.left(); x <= box.right(); ++x) {
            const QColor c = image.pixelColor(x, y);
            if (const double d = std::abs(relativeLuminance(c) - lb); d > distance) {
                distance = d;
                best = c;
            }
        }
    return best;
}

} // namespace detail

// The text in `rect` of `image`: the background is the most common colour
// there; each word (ink separated from the next by more than 3 blank
// columns, on its own line of ink) has as its colour the pixel farthest in
// luminance from the background. Words too small to reach their full colour
// (a middle dot, a dash) count only when nothing else is there; a symbol
// (detail::isSymbol) needs kSymbolContrast. Returns the word furthest under
// its minimum, relatively (else the lowest); nullopt when the rectangle
// holds no ink at all.
inline std::optional<TextContrast> lowestTextContrast(const QImage& image, QRect rect) {
    rect &= image.rect();
    if (rect.isEmpty())
        return std::nullopt;
    std::unordered_map<QRgb, int> counts;
    for (int y = rect.top(); y <= rect.bottom(); ++y)
        for (int x = rect.left(); x <= rect.right(); ++x)
            ++counts[image.pixel(x, y)];
    const QRgb bg = std::max_element(counts.begin(), counts.end(), [](auto& a, auto& b) { return a.second < b.second; })->first;
    const auto ink = [&](int x, int y) { return detail::isInk(image.pixel(x, y), bg); };
    std::vector<QRect> words;
    const auto lines = detail::runs(rect.top(), rect.bottom() + 1, 0, [&](int y) {
        for (int x = rect.left(); x <= rect.right(); ++x)
            if (ink(x, y))
                return true;
        return false;
    });
    for (const auto& [top, bottom] : lines)
        for (const auto& [left, right] : detail::runs(rect.left(), rect.right() + 1, 3, [&](int x) {
                 for (int y = top; y < bottom; ++y)
                     if (ink(x, y))
                         return true;
                 return false;
             }))
            words.emplace_back(QPoint(left, top), QPoint(right - 1, bottom - 1));
    if (words.empty())
        return std::nullopt;
    std::vector<QRect> sized;
    std::copy_if(words.begin(), words.end(), std::back_inserter(sized),
                 [](const QRect& w) { return w.width() >= 3 && w.height() >= 5; });
    if (sized.empty())
        sized = words;
    std::optional<TextContrast> lowest;
    const QColor background = QColor::fromRgb(bg);
    for (const QRect& word : sized) {
        const QColor text = detail::farthest(image, word, background);
        const double wanted = detail::isSymbol(image, word, bg) ? kSymbolContrast : kReadableContrast;
        const TextContrast c{text, background, word, contrastRatio(text, background), wanted};
        if (!lowest || c.ratio / c.wanted < lowest->ratio / lowest->wanted)
            lowest = c;
    }
    return lowest;
}

} // namespace kvscope::ui::test
