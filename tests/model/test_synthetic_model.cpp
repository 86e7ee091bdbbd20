// make-model's files: a preset's shape that the engine loads and runs. The
// writer, the loader and ModelGeometry::parameters() all follow the shape's
// numbers, so a shape cut smaller checks what the full one would at a
// fraction of the cost (drawing the random weights is most of it, and the
// unit tests also run under ASan): llama-15m as it is, and qwen2.5-0.5b
// (qwen2: QKV biases, 14 query heads to 2 KV heads, tied embeddings) with 2
// of its 24 layers and 4096 of its 151936 tokens.
#include <QtTest>

#include <QTemporaryDir>

#include <memory>

#include "engine/model/synthetic_model.h"
#include "engine/model/tensor_stats.h"
#include "engine/completion.h"
#include "engine/tokenizer/tokenizer.h"

using namespace kvscope;

class TestSyntheticModel : public QObject {
    Q_OBJECT
private slots:
    void writes_a_loadable_model_of_the_preset_shape_data();
    void writes_a_loadable_model_of_the_preset_shape();
};

void TestSyntheticModel::writes_a_loadable_model_of_the_preset_shape_data() {
    QTest::addColumn<QString>("preset");
    QTest::addColumn<int>("type");
    QTest::addColumn<int>("layers"); // 0 here and below: the preset's
    QTest::addColumn<int>("vocab");
    QTest::newRow("llama-15m q4_0") << "llama-15m" << int(GgmlType::Q4_0) << 0 << 0;
    QTest::newRow("qwen2.5-0.5b q8_0, cut") << "qwen2.5-0.5b" << int(GgmlType::Q8_0) << 2 << 4096;
}

void TestSyntheticModel::writes_a_loadable_model_of_the_preset_shape() {
    QFETCH(QString, preset);
    QFETCH(int, type);
    QFETCH(int, layers);
    QFETCH(int, vocab);
    QTemporaryDir dir;
    const std::string path = dir.filePath("m.gguf").toStdString();
    ModelGeometry g = find_model_preset(preset.toStdString());
    if (layers > 0)
        g.n_layers = static_cast<std::uint32_t>(layers);
    if (vocab > 0)
        g.vocab = static_cast<std::uint32_t>(vocab);
    write_synthetic_model(g, static_cast<GgmlType>(type), 7, path);

    const auto model = std::make_shared<const Model>(path);
    const ModelConfig& c = model->config();
    QCOMPARE(c.architecture, g.architecture);
    QCOMPARE(c.n_layers, g.n_layers);
    QCOMPARE(c.embedding_dim, g.dim);
    QCOMPARE(c.n_kv_heads, g.n_kv_heads);
    QCOMPARE(c.ffn_dim, g.ffn_dim);
    QCOMPARE(c.vocab_size, g.vocab);
    QCOMPARE(c.tied_embeddings, g.tied_embeddings);
    QCOMPARE(c.qkv_bias, g.qkv_bias);
    // The parameter count the file really holds is the one the shape claims.
    QCOMPARE(tensor_stats(model->file()).parameters, g.parameters());

    const Tokenizer tok(read_vocabulary(model->file()));
    QCOMPARE(tok.n_tokens(), static_cast<std::int32_t>(g.vocab));
    const std::vector<TokenId> prompt = tok.encode("hello");
    EngineConfig config;
    config.backend = Backend::Cpu;
    Engine engine(config_for_one_request(config, prompt.size() + 3), model);
    RequestParams params;
    params.max_new_tokens = 3;
    params.ignore_eos = true;
    QCOMPARE(run_to_completion(engine, prompt, params).tokens.size(), std::size_t{3});
}

QTEST_APPLESS_MAIN(TestSyntheticModel)
#include "test_synthetic_model.moc"
