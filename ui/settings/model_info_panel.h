#pragma once

#include <QWidget>

#include "engine/core/byte_text.h"
#include "engine/engine_snapshot.h"

#include "ui/bridge/model_summary.h"

class QLabel;

namespace kvscope::ui {

// What the loaded model is: architecture, parameters, tensor types, its
// layers by kind (sliding-window, global, without RoPE; ModelConfig's
// layer_kinds), what it computes beyond llama (features), RoPE by layer
// kind, context, chat template, and what its KV cache costs (from the
// engine's KvLayout). A mixture of experts adds the parameters a token
// reads (TensorStats' active parameters) and its experts: how many, how
// wide, how many a token is routed to; a dense model's rows stay as they were.
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

// The words for a snapshot's device, used wherever a panel or the status
// bar names it. Where the KV pool lives: "host RAM", "VRAM of NVIDIA H200"
// (host memory is never called VRAM).
QString kvLocationText(const DeviceSnapshot& device);
// What runs the engine: "CPU · 8 threads", "GPU · NVIDIA H200".
QString backendText(const DeviceSnapshot& device, int threads);
// "1.1 B", "260.0 K". Byte counts: bytesText, engine/core/byte_text.h's words as a QString.
QString countText(double count);
inline QString bytesText(double bytes) { return QString::fromStdString(bytes_text(bytes)); }

} // namespace kvscope::ui
