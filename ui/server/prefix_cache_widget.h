#pragma once

#include <cstdint>
#include <vector>

#include <QWidget>

namespace kvscope::ui {

// One vLLM rank's prefix cache as its KV events describe it: one bar per
// cached prefix chain, longest first, as tall as the chain is deep in
// blocks. Blocks are known by hash only, so this is a picture of prefixes,
// not of where blocks sit in memory. Paints only the lengths given.
class PrefixCacheWidget : public QWidget {
    Q_OBJECT
public:
    explicit PrefixCacheWidget(QWidget* parent = nullptr);

    void setChainLengths(std::vector<std::uint32_t> lengths);
    const std::vector<std::uint32_t>& chainLengths() const { return lengths_; }

    QSize sizeHint() const override;

protected:
    void paintEvent(QPaintEvent* event) override;

private:
    std::vector<std::uint32_t> lengths_;
};

} // namespace kvscope::ui
