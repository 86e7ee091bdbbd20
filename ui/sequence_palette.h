#pragma once

#include <functional>

#include <QString>
#include <QtGui/qrgb.h>

#include "engine/kv/kv_ids.h"

namespace kvscope::ui {

// How sequences look on a block map: a colour and a name per SeqId. Colours
// are a pure function of the id, so two maps of the same sequences (paged
// and contiguous side by side) always agree.
class SequencePalette {
public:
    using Namer = std::function<QString(SeqId)>;

    SequencePalette(); // names "seq 7"
    explicit SequencePalette(Namer namer);

    QRgb color(SeqId seq) const;
    QString name(SeqId seq) const { return namer_(seq); }

private:
    Namer namer_;
};

} // namespace kvscope::ui
