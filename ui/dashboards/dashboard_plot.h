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

QCPGraph* addLine(QCustomPlot* plot, const QString& name, const QColor& color, Qt::PenStyle style = Qt::SolidLine);

// The values a graph holds, in key order (for tests and exports).
std::vector<double> graphValues(const QCPGraph* graph);

// Redraws on the next event loop pass; many snapshots in a burst cost one paint.
inline void queueReplot(QCustomPlot* plot) { plot->replot(QCustomPlot::rpQueuedReplot); }

} // namespace kvscope::ui
