#include "ui/settings/model_info_panel.h"

#include <QLabel>
#include <QScrollArea>
#include <QVBoxLayout>

#include "engine/model/ggml_type.h"

namespace kvscope::ui {
namespace {

QString deviceName(const DeviceSnapshot& device) {
    return device.name ? QString::fromStdString(*device.name) : QObject::tr("an unnamed device");
}

QString row(const QString& key, const QString& value) {
    return QStringLiteral("<tr><td>%1</td><td>%2</td></tr>").arg(key.toHtmlEscaped(), value.toHtmlEscaped());
}

QString heading(const QString& text) {
    return QStringLiteral("<tr><td colspan=2><br><b>%1</b></td></tr>").arg(text.toHtmlEscaped());
}

QString tensorTypes(const TensorStats& stats) {
    QStringList parts;
    for (const TensorTypeStats& t : stats.by_type)
        parts << QObject::tr("%1: %2 tensors, %3")
                     .arg(QString::fromStdString(std::string(to_string(t.type))))
                     .arg(t.tensors)
                     .arg(bytesText(static_cast<double>(t.bytes)));
    return parts.join(QStringLiteral("\n"));
}

// 1000000, 8, 0.5: a number as the file gives it, never in exponent form.
QString numberText(double base) { return QString::number(base, 'g', 12); }

// How the layers that rotate turn positions into angles, by layer kind:
// "base 1000000, sliding-window layers 10000; neox halves", "base 1000000;
// linear ×8 on 5 of 34 layers; neox halves". Layers without RoPE are the
// Layers row's.
QString ropeText(const ModelConfig& c) {
    std::uint32_t rotating = 0, scaled = 0;
    double windowBase = 0.0;
    for (const LayerAttention& l : c.layers) {
        if (!l.rope)
            continue;
        ++rotating;
        scaled += l.rope_scaled;
        if (l.window > 0 && l.rope_theta != c.rope_theta)
            windowBase = l.rope_theta;
    }
    QString text = QObject::tr("base %1").arg(numberText(c.rope_theta));
    if (windowBase > 0.0)
        text += QObject::tr(", sliding-window layers %1").arg(numberText(windowBase));
    if (c.rope_scaling && scaled > 0) {
        text += QObject::tr("; %1 \u00d7%2")
                    .arg(QString::fromStdString(c.rope_scaling->type), numberText(c.rope_scaling->factor));
        if (scaled < rotating)
            text += QObject::tr(" on %1 of %2 layers").arg(scaled).arg(c.n_layers);
    }
    return text + QStringLiteral("; ") + QString::fromStdString(std::string(to_string(c.rope_style)));
}

// A share as a person reads it: "17%", "0.4%".
QString percentText(double share) { return QString::number(100.0 * share, 'f', share < 0.1 ? 1 : 0) + QLatin1Char('%'); }

// What one token reads of a mixture of experts' weights, beside its
// Parameters (TensorStats' active parameters).
QString activeParametersRow(const ModelSummary& s) {
    const Experts& e = s.config.experts;
    const auto total = static_cast<double>(s.tensors.parameters);
    const auto active = static_cast<double>(s.tensors.active_parameters(e.count, e.used));
    return row(QObject::tr("Active parameters"), QObject::tr("%1 per token (%2 of all)")
                                                     .arg(countText(active), percentText(total > 0 ? active / total : 0)));
}

// The experts a mixture of experts' router picks from, in place of one FFN.
QString expertRows(const Experts& e) {
    return row(QObject::tr("Experts"), QObject::tr("%1 in each layer, each an FFN %2 wide").arg(e.count).arg(e.ffn_dim)) +
           row(QObject::tr("Active experts"),
               QObject::tr("%1 of %2 per token in each layer, picked by a router").arg(e.used).arg(e.count));
}

// "2880 / 8192": the embedding's and the FFN's widths; a mixture of
// experts has no one FFN (its experts' rows follow).
QString widthRows(const ModelConfig& c) {
    if (c.is_moe())
        return row(QObject::tr("Embedding"), QString::number(c.embedding_dim)) + expertRows(c.experts);
    return row(QObject::tr("Embedding / FFN"), QStringLiteral("%1 / %2").arg(c.embedding_dim).arg(c.ffn_dim));
}

QString html(const ModelSummary& s) {
    const ModelConfig& c = s.config;
    QString out = QStringLiteral("<table cellspacing=2>");
    out += heading(QObject::tr("Model"));
    out += row(QObject::tr("Source"), s.source.isSynthetic() ? s.source.label() : s.source.path);
    if (!c.name.empty())
        out += row(QObject::tr("Name"), QString::fromStdString(c.name));
    out += row(QObject::tr("Architecture"), QString::fromStdString(c.architecture));
    out += row(QObject::tr("Parameters"), countText(static_cast<double>(s.tensors.parameters)));
    if (c.is_moe())
        out += activeParametersRow(s);
    out += row(QObject::tr("Weights"), bytesText(static_cast<double>(s.tensors.bytes)));
    out += row(QObject::tr("Tensor types"), tensorTypes(s.tensors)).replace(QStringLiteral("\n"), QStringLiteral("<br>"));
    out += row(QObject::tr("Layers"), QString::fromStdString(c.layer_kinds()));
    out += row(QObject::tr("Beyond llama"), QString::fromStdString(c.features()));
    out += row(QObject::tr("RoPE"), ropeText(c));
    out += row(QObject::tr("Heads"), QObject::tr("%1 (%2 KV) \u00d7 %3").arg(c.n_heads).arg(c.n_kv_heads).arg(c.head_dim));
    out += widthRows(c);
    out += row(QObject::tr("Vocabulary"), QString::number(c.vocab_size));
    out += row(QObject::tr("Context"), QObject::tr("%1 tokens").arg(c.context_length));
    out += row(QObject::tr("Chat template"), s.chat_template_known
                                                ? QString::fromStdString(s.chat_template)
                                                : QObject::tr("none known: plain completion"));
    out += heading(QObject::tr("KV cache"));
    out += row(QObject::tr("KV dtype"), QString::fromStdString(s.kv_dtype));
    out += row(QObject::tr("Bytes per token"), QObject::tr("%1 (all layers, K and V)").arg(s.kv_bytes_per_token));
    out += row(QObject::tr("Block"), QObject::tr("%1 tokens").arg(s.block_size));
    out += row(QObject::tr("Pool"), QObject::tr("%1 blocks, %2 in %3")
                                        .arg(s.kv_blocks)
                                        .arg(bytesText(static_cast<double>(s.kv_pool_bytes)))
                                        .arg(kvLocationText(s.device)));
    out += QStringLiteral("</table>");
    if (s.source.isSynthetic())
        out += QObject::tr("<p><b>Synthetic model:</b> random weights of a real model's shape. Memory and speed "
                           "are real; it produces meaningless text.</p>");
    return out;
}

} // namespace

QString kvLocationText(const DeviceSnapshot& device) {
    if (device.kv_memory == MemoryPlace::Host)
        return QObject::tr("host RAM");
    return QObject::tr("VRAM of %1").arg(deviceName(device));
}

QString backendText(const DeviceSnapshot& device, int threads) {
    if (device.backend == Backend::Cuda)
        return QObject::tr("GPU \u00b7 %1").arg(deviceName(device));
    return QObject::tr("CPU \u00b7 %1 threads").arg(threads);
}

QString countText(double count) {
    if (count >= 1e9)
        return QStringLiteral("%1 B").arg(count / 1e9, 0, 'f', 2);
    if (count >= 1e6)
        return QStringLiteral("%1 M").arg(count / 1e6, 0, 'f', 1);
    if (count >= 1e3)
        return QStringLiteral("%1 K").arg(count / 1e3, 0, 'f', 1);
    return QString::number(count, 'f', 0);
}

ModelInfoPanel::ModelInfoPanel(QWidget* parent) : QWidget(parent), label_(new QLabel) {
    label_->setObjectName(QStringLiteral("modelInfo"));
    label_->setTextFormat(Qt::RichText);
    label_->setWordWrap(true);
    label_->setAlignment(Qt::AlignTop | Qt::AlignLeft);
    label_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    auto* scroll = new QScrollArea;
    scroll->setWidgetResizable(true);
    scroll->setFrameShape(QFrame::NoFrame);
    scroll->setWidget(label_);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 4, 4, 4);
    layout->addWidget(scroll);
    clear();
}

void ModelInfoPanel::setSummary(const ModelSummary& summary) { label_->setText(html(summary)); }

void ModelInfoPanel::clear() { label_->setText(tr("No model loaded.")); }

QString ModelInfoPanel::text() const { return label_->text(); }

} // namespace kvscope::ui
