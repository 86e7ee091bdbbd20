// Small QCustomPlot helpers the dashboards share. Only .cpp files include
// this header: qcustomplot.h is slow to compile.
#pragma once

#include <vector>

#include <QColor>
#include <QString>
#include <qcustomplot.h>

namespace kvscope::ui {

// A QCustomPlot with the dashboards' common look: legend in rows above the
// axis rect (where it cannot cover a line), small fonts, no interaction.
QCustomPlot* newDashboardPlot(QWidget* parent, const QString& xLabel, const QString& yLabel, bool legend = true);

// Keeps the plot's background, axes, legend and text items (notes, in the
// palette's PlaceholderText) in the colours of its palette, now and after
// every theme change (newDashboardPlot does this).
void followPalette(QCustomPlot* plot);

QCPGraph* addLine(QCustomPlot* plot, const QString& name, const QColor& color, Qt::PenStyle style = Qt::SolidLine);

// The values a graph holds, in key order (for tests and exports).
std::vector<double> graphValues(const QCPGraph* graph);

// A replot costs the UI thread ~10 ms at the default dock size, and
// snapshots come ~30 a second: a plot read by eye is redrawn at most this
// often, so that the window answers within its 50 ms budget under load
// (UiLatencyProbe).
inline constexpr int kMinReplotIntervalMs = 200;

// Redraws on the next event loop pass, with the data the plot holds then;
// calls within kMinReplotIntervalMs of that redraw are folded into one more
// at the interval's end. A lone update is drawn at once.
void queueReplot(QCustomPlot* plot);

} // namespace kvscope::ui
