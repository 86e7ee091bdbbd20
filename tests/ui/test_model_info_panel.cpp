// The model panel's rows as a person reads them (ModelInfoPanel), for
// synthetic models read from their files: a windowed Gemma 3 (its layers
// by kind, what it computes beyond llama, RoPE by layer kind) and a plain
// llama; Gemma 3's RoPE scaling, which only its global layers get; and a
// mixture of experts' rows (experts, active experts, active parameters),
// which a dense model does not have.
#include <QtTest>

#include <QTemporaryDir>
#include <QTextDocument>
#include <QTextFrame>
#include <QTextTable>

#include "engine/model/gguf_file.h"
#include "engine/model/model_config.h"
#include "engine/model/synthetic_model.h"
#include "engine/model/tensor_stats.h"
#include "engine/presets/model_presets.h"
#include "ui/settings/model_info_panel.h"

using namespace kvscope;
using namespace kvscope::ui;

namespace {

// The value of the panel's row named `key` ("" without one), as its rich
// text lays it out.
QString row(const ModelInfoPanel& panel, const QString& key) {
    QTextDocument doc;
    doc.setHtml(panel.text());
    const QList<QTextFrame*> frames = doc.rootFrame()->childFrames();
    auto* table = frames.isEmpty() ? nullptr : qobject_cast<QTextTable*>(frames.front());
    if (!table || table->columns() != 2)
        return {};
    const auto cellText = [](const QTextTableCell& cell) {
        QTextCursor c = cell.firstCursorPosition();
        c.setPosition(cell.lastCursorPosition().position(), QTextCursor::KeepAnchor);
        return c.selectedText().trimmed();
    };
    for (int r = 0; r < table->rows(); ++r)
        if (cellText(table->cellAt(r, 0)) == key)
            return cellText(table->cellAt(r, 1));
    return {};
}

} // namespace

class TestModelInfoPanel : public QObject {
    Q_OBJECT

private slots:
    void initTestCase();
    void windowed_model();
    void llama();
    void rope_scaling_on_global_layers();
    void mixture_of_experts();

private:
    // The summary of a preset cut for a test, written and read back.
    ModelSummary summary(const QString& preset, const GeometryCut& cut);

    QTemporaryDir dir_;
    // Gemma 3 270M's first six layers: five attend within 512 tokens, the sixth to all.
    ModelSummary gemma3_;
};

void TestModelInfoPanel::initTestCase() {
    QVERIFY(dir_.isValid());
    gemma3_ = summary(QStringLiteral("gemma3-270m"), {.layers = 6, .vocab = 512, .ffn = 64});
}

ModelSummary TestModelInfoPanel::summary(const QString& preset, const GeometryCut& cut) {
    const QString path = dir_.filePath(preset + QStringLiteral(".gguf"));
    write_synthetic_model(cut_geometry(find_model_preset(preset.toStdString()), cut), GgmlType::F16, 1,
                          path.toStdString());
    const GgufFile file(path.toStdString());
    ModelSummary s;
    s.source = ModelSource::file(path);
    s.config = read_model_config(file);
    s.tensors = tensor_stats(file);
    return s;
}

void TestModelInfoPanel::windowed_model() {
    ModelInfoPanel panel;
    panel.setSummary(gemma3_);
    QCOMPARE(row(panel, QStringLiteral("Architecture")), QStringLiteral("gemma3"));
    QCOMPARE(row(panel, QStringLiteral("Layers")), QStringLiteral("6 layers: 5 sliding-window (512), 1 global"));
    QCOMPARE(row(panel, QStringLiteral("Beyond llama")),
             QStringLiteral("QK-norm, post-norms, gelu (tanh) FFN, scaled embeddings"));
    QCOMPARE(row(panel, QStringLiteral("RoPE")),
             QStringLiteral("base 1000000, sliding-window layers 10000; neox halves"));
    QCOMPARE(row(panel, QStringLiteral("Heads")), QStringLiteral("4 (1 KV) \u00d7 256"));
}

void TestModelInfoPanel::llama() {
    ModelInfoPanel panel;
    panel.setSummary(summary(QStringLiteral("llama-15m"), {.vocab = 512}));
    QCOMPARE(row(panel, QStringLiteral("Architecture")), QStringLiteral("llama"));
    QCOMPARE(row(panel, QStringLiteral("Layers")), QStringLiteral("6 layers, all global"));
    QCOMPARE(row(panel, QStringLiteral("Beyond llama")), QStringLiteral("none"));
    QCOMPARE(row(panel, QStringLiteral("RoPE")), QStringLiteral("base 10000; adjacent pairs"));
    QCOMPARE(row(panel, QStringLiteral("Embedding / FFN")), QStringLiteral("288 / 768"));
    // A dense model has no expert rows.
    for (const char* key : {"Active parameters", "Experts", "Active experts", "Embedding"})
        QVERIFY2(row(panel, QLatin1String(key)).isEmpty(), key);
}

void TestModelInfoPanel::rope_scaling_on_global_layers() {
    // Gemma 3 4B's files scale RoPE linearly by 8, which its sliding-window
    // layers do not take (read_model_config marks the layers); the 270M
    // file's layers, with that scaling, stand in for it at a tenth of the size.
    ModelSummary s = gemma3_;
    s.config.rope_scaling = RopeScaling{"linear", 8.0, 0};
    ModelInfoPanel panel;
    panel.setSummary(s);
    QCOMPARE(row(panel, QStringLiteral("RoPE")),
             QStringLiteral("base 1000000, sliding-window layers 10000; linear \u00d78 on 1 of 6 layers; neox halves"));
}

// Qwen3-30B-A3B's first layer with 16 experts 64 wide, of which each token
// is routed to 8 (the preset's): the other 8 experts' gate, up and down
// matrices (3 × 2048 × 64 values each) are not active.
void TestModelInfoPanel::mixture_of_experts() {
    const ModelSummary s = summary(QStringLiteral("qwen3-30b-a3b"), {.layers = 1, .vocab = 512, .ffn = 64, .experts = 16});
    ModelInfoPanel panel;
    panel.setSummary(s);
    QCOMPARE(row(panel, QStringLiteral("Architecture")), QStringLiteral("qwen3moe"));
    QCOMPARE(row(panel, QStringLiteral("Experts")), QStringLiteral("16 in each layer, each an FFN 64 wide"));
    QCOMPARE(row(panel, QStringLiteral("Active experts")),
             QStringLiteral("8 of 16 per token in each layer, picked by a router"));
    QCOMPARE(row(panel, QStringLiteral("Embedding")), QStringLiteral("2048"));
    QVERIFY(row(panel, QStringLiteral("Embedding / FFN")).isEmpty()); // no one FFN: the experts' rows say it
    // The engine's count (TensorStats), which leaves out at least the 8
    // experts a token is not routed to.
    const std::uint64_t activeCount = s.tensors.active_parameters(16, 8);
    QVERIFY(activeCount <= s.tensors.parameters - 8ull * 3 * 2048 * 64);
    const double active = static_cast<double>(activeCount);
    QCOMPARE(row(panel, QStringLiteral("Active parameters")),
             QStringLiteral("%1 per token (%2% of all)")
                 .arg(countText(active))
                 .arg(100.0 * active / static_cast<double>(s.tensors.parameters), 0, 'f', 0));
    QCOMPARE(row(panel, QStringLiteral("Parameters")), countText(static_cast<double>(s.tensors.parameters)));
}

QTEST_MAIN(TestModelInfoPanel)
#include "test_model_info_panel.moc"
