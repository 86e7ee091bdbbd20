#pragma once

#include <vector>

#include <QWidget>

#include "ui/playground/playground_model.h"

class QCustomPlot; // qcustomplot.h is slow to compile: only playground_chart.cpp includes it

namespace kvscope::ui {

// Blocks in use and unusable memory (internal + reserved waste + external
// fragmentation, all as a share of the pool) of both pools after each
// playground operation. Blocks in use rather than token occupancy: a
// contiguous fork copies its tokens, which would count twice.
class PlaygroundChart : public QWidget {
    Q_OBJECT
public:
    explicit PlaygroundChart(QWidget* parent = nullptr);

    void setHistory(const std::vector<PlaygroundStep>& history);
    // Graph points per series, in the order paged in use, contiguous in
    // use, paged unusable, contiguous unusable (for tests).
    std::vector<int> pointCounts() const;
    // A series' line colour (same order): a light and a dark version, so
    // that the lines stand out from the plot's background in either theme.
    QColor seriesColour(int series) const;

protected:
    void changeEvent(QEvent* event) override;

private:
    void colourSeries();

    QCustomPlot* plot_;
};

} // namespace kvscope::ui
