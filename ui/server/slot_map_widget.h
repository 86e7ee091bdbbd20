#pragma once

#include <vector>

#include <QWidget>

#include "ui/server/server_view_model.h"

namespace kvscope::ui {

// llama.cpp's KV cache as its slots hold it: one row per slot, as long as
// the slot's n_ctx (the longest slot spans the width), the tokens it holds
// filled from the left in the slot's colour (busy) or grey (idle), the
// rest drawn as the block map draws Reserved blocks: reserved but unused,
// the contiguous allocator's reserved waste. Paints only the rows given.
class SlotMapWidget : public QWidget {
    Q_OBJECT
public:
    explicit SlotMapWidget(QWidget* parent = nullptr);

    void setRows(std::vector<SlotRow> rows);
    const std::vector<SlotRow>& rows() const { return rows_; }

    QSize sizeHint() const override;
    QSize minimumSizeHint() const override;

protected:
    void paintEvent(QPaintEvent* event) override;
    bool event(QEvent* event) override; // per-row tooltips

private:
    int rowAt(int y) const;
    QRect barRect(int row) const;

    std::vector<SlotRow> rows_;
};

} // namespace kvscope::ui
