#pragma once

#include <functional>

#include <QString>
#include <QtGui/qrgb.h>

#include "engine/kv/kv_ids.h"

namespace kvscope::ui {

// How sequences look on a block map: a colour and a name per SeqId. By
// default colours are a pure function of the id, so two maps of the same
// sequences (paged and contiguous side by side) always agree; the app
// colours a chat's sequences with its tab's colour instead, and names the
// chat a cached-free block came from.
class SequencePalette {
public:
    using Namer = std::function<QString(SeqId)>;
    using Colorer = std::function<QRgb(SeqId)>;

    SequencePalette(); // names "seq 7"
    // cacheNamer: see cachedFrom; empty: no cached block is attributed.
    explicit SequencePalette(Namer namer, Colorer colorer = {}, Namer cacheNamer = {});

    QRgb color(SeqId seq) const;
    static QRgb defaultColor(SeqId seq);
    QString name(SeqId seq) const { return namer_(seq); }
    // Whose content a cached-free block last held by `seq` is ("Chat 1"),
    // for blocks the map paints in a muted color(seq); empty when such
    // blocks stay plain cached grey (workload requests, the playground).
    QString cachedFrom(SeqId seq) const { return cacheNamer_ ? cacheNamer_(seq) : QString(); }

private:
    Namer namer_;
    Colorer colorer_; // empty: defaultColor
    Namer cacheNamer_;
};

} // namespace kvscope::ui
