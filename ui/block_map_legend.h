#pragma once

#include <QWidget>

namespace kvscope::ui {

// A row of sample cells naming each block state, painted by the same
// CellPainter as the map so the two cannot disagree.
class BlockMapLegend : public QWidget {
    Q_OBJECT
public:
    explicit BlockMapLegend(QWidget* parent = nullptr);
};

} // namespace kvscope::ui
