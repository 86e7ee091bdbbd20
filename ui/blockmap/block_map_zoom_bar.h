#pragma once

#include <QWidget>

class QLabel;
class QToolButton;

namespace kvscope::ui {

class BlockMapWidget;

// Zoom out, zoom in and "Fit" for a BlockMapWidget, and a line saying the
// scale ("1 cell = 32 blocks · 4,096 of 200,000 blocks in view"). The map
// does the work (wheel, + - 0 and dragging work on it directly); the bar is
// where a person finds them, kept in step through BlockMapWidget::viewChanged.
class BlockMapZoomBar : public QWidget {
    Q_OBJECT
public:
    explicit BlockMapZoomBar(BlockMapWidget* map, QWidget* parent = nullptr);

    QToolButton* zoomOutButton() const { return out_; }
    QToolButton* zoomInButton() const { return in_; }
    QToolButton* fitButton() const { return fit_; }
    QString scaleText() const;

private:
    void refresh();

    BlockMapWidget* map_;
    QToolButton* out_;
    QToolButton* in_;
    QToolButton* fit_;
    QLabel* scale_;
};

} // namespace kvscope::ui
