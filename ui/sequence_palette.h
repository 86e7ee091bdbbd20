#pragma once

#include <functional>

#include <QString>
#include <QtGui/qrgb.h>

#include "engine/kv/kv_ids.h"

namespace kvscope::ui {

// How sequences look on a block map: a colour and a name per SeqId. By
// default colours are a pure function of the id, so two maps of the same
// sequences (paged and contiguous side by side) always agree; the app
// colours a chat's sequences with its tab's colour instead.
class SequencePalette {
public:
    using Namer = std::function<QString(SeqId)>;
    using Colorer = std::function<QRgb(SeqId)>;

    SequencePalette(); // names "seq 7"
    explicit SequencePalette(Namer namer, Colorer colorer = {});

    QRgb color(SeqId seq) const;
    static QRgb defaultColor(SeqId seq);
    QString name(SeqId seq) const { return namer_(seq); }

private:
    Namer namer_;
    Colorer colorer_; // empty: defaultColor
};

} // namespace kvscope::ui
