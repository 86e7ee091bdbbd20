#pragma once

#include <string>

#include <QWidget>

#include "ui/model_summary.h"

class QLabel;

namespace kvscope::ui {

// What the loaded model is: architecture, parameters, tensor types, context,
// chat template, and what its KV cache costs (from the engine's KvLayout).
class ModelInfoPanel : public QWidget {
    Q_OBJECT
public:
    explicit ModelInfoPanel(QWidget* parent = nullptr);

    void setSummary(const ModelSummary& summary);
    void clear();
    QString text() const;

private:
    QLabel* label_;
};

// Where a KV pool lives, from the engine's device text: host memory is
// "host RAM", never "VRAM".
QString kvLocationText(const std::string& device);
bool isHostMemory(const std::string& device);
// "1.1 B", "260.0 K"; "12.3 MiB".
QString countText(double count);
QString bytesText(double bytes);

} // namespace kvscope::ui
