#pragma once

#include <memory>

#include <QWidget>

#include "engine/engine_snapshot.h"
#include "ui/sequence_palette.h"

class QLabel;

namespace kvscope::ui {

class BlockMapWidget;

// The engine's KV pool as it is now: the block map of the latest snapshot
// (each chat in its tab's colour), its legend and a line of figures ending
// with where the pool lives (Compare A/B's engines may differ there).
class LivePoolPanel : public QWidget {
    Q_OBJECT
public:
    explicit LivePoolPanel(QWidget* parent = nullptr);

    void setSnapshot(std::shared_ptr<const EngineSnapshot> snapshot, SequencePalette palette);
    BlockMapWidget* map() const { return map_; }
    QString figures() const;

private:
    BlockMapWidget* map_;
    QLabel* figures_;
};

} // namespace kvscope::ui
