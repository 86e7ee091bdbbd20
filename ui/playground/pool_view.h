#pragma once

#include <memory>

#include <QHash>
#include <QWidget>

#include "engine/kv/pool_snapshot.h"
#include "ui/playground/playground_model.h"

class QGridLayout;
class QLabel;

namespace kvscope::ui {

class BlockMapWidget;
class SequencePalette;

// One pool of the playground: title, block map, the last operation's outcome
// (refusals in red) and the pool's fragmentation figures.
class PoolView : public QWidget {
    Q_OBJECT
public:
    PoolView(const QString& title, const QString& subtitle, QWidget* parent = nullptr);

    void display(std::shared_ptr<const PoolSnapshot> snapshot, const OpOutcome& outcome);
    void setSequencePalette(const SequencePalette& palette);

    BlockMapWidget* map() const { return map_; }
    QLabel* outcomeLabel() const { return outcome_; }
    // The value shown for a figure: "tokenOccupancy", "blockOccupancy",
    // "internalWaste", "reservedWaste", "externalFragmentation",
    // "largestFreeRun", "freeBlocks", "sequences".
    QString figure(const QString& key) const;

private:
    void addFigure(const QString& key, const QString& label, const QString& tip);
    void showFigures(const PoolSnapshot& snapshot);
    void showOutcome(const OpOutcome& outcome);

    BlockMapWidget* map_;
    QLabel* outcome_;
    QHash<QString, QLabel*> figures_;
    QGridLayout* grid_;
};

} // namespace kvscope::ui
