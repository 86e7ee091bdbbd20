// read_model_config on tiny hand-built llama and qwen2 files: the values it
// reads, and a clear error for each way the metadata or tensors can be wrong.
#include <QTemporaryDir>
#include <QTest>

#include <functional>
#include <map>
#include <set>

#include "engine/core/error.h"
#include "engine/model/model_config.h"
#include "engine/model/tensor_stats.h"
#include "gguf_writer.h"

using kvscope::GgufFile;
using kvscope::ModelConfig;
using kvscope::RopeStyle;
using kvscope::test::GgufWriter;

namespace {

using Dims = std::vector<std::uint64_t>;

// A complete little model with zero F32 weights. Tests change a field, or
// override/omit tensors and add metadata through the hooks, then build().
struct TinyModel {
    std::string arch = "llama";
    std::uint32_t layers = 2, dim = 8, heads = 2, kv_heads = 1, head_dim = 4, ffn = 16,
                  vocab = 10, context = 64;
    float rope_base = 500000.0f;
    bool output = false;
    bool bias = false;
    std::set<std::string> omit;               // tensors left out
    std::map<std::string, Dims> shapes;       // tensors with another shape
    std::map<std::string, std::uint32_t> types; // tensors with another ggml type
    std::function<void(GgufWriter&)> extra_metadata = [](GgufWriter&) {};

    std::string build() const {
        GgufWriter w;
        w.add_string("general.architecture", arch);
        w.add_string("general.name", "tiny");
        const std::string p = arch + ".";
        w.add_u32(p + "block_count", layers);
        w.add_u32(p + "embedding_length", dim);
        w.add_u32(p + "attention.head_count", heads);
        w.add_u32(p + "attention.head_count_kv", kv_heads);
        w.add_u32(p + "feed_forward_length", ffn);
        w.add_u32(p + "context_length", context);
        w.add_f32(p + "attention.layer_norm_rms_epsilon", 1e-6f);
        w.add_f32(p + "rope.freq_base", rope_base);
        std::vector<std::string> tokens;
        for (std::uint32_t i = 0; i < vocab; ++i)
            tokens.push_back("t" + std::to_string(i));
        w.add_string_array("tokenizer.ggml.tokens", tokens);
        extra_metadata(w);

        const std::uint64_t q = heads * head_dim, kv = kv_heads * head_dim;
        tensor(w, "token_embd.weight", {dim, vocab});
        tensor(w, "output_norm.weight", {dim});
        if (output)
            tensor(w, "output.weight", {dim, vocab});
        for (std::uint32_t l = 0; l < layers; ++l) {
            const std::string b = "blk." + std::to_string(l) + ".";
            tensor(w, b + "attn_norm.weight", {dim});
            tensor(w, b + "attn_q.weight", {dim, q});
            tensor(w, b + "attn_k.weight", {dim, kv});
            tensor(w, b + "attn_v.weight", {dim, kv});
            tensor(w, b + "attn_output.weight", {q, dim});
            tensor(w, b + "ffn_norm.weight", {dim});
            tensor(w, b + "ffn_gate.weight", {dim, ffn});
            tensor(w, b + "ffn_up.weight", {dim, ffn});
            tensor(w, b + "ffn_down.weight", {ffn, dim});
            if (bias) {
                tensor(w, b + "attn_q.bias", {q});
                tensor(w, b + "attn_k.bias", {kv});
                tensor(w, b + "attn_v.bias", {kv});
            }
        }
        return w.bytes();
    }

    void tensor(GgufWriter& w, const std::string& name, Dims dims) const {
        if (omit.contains(name))
            return;
        if (shapes.contains(name))
            dims = shapes.at(name);
        const std::uint32_t type = types.contains(name) ? types.at(name) : 0;
        // Zero bytes of the right size: 4 per value for F32, Q8_1 (36 bytes
        // per 32 values, a type kvscope does not compute with) is the only
        // other type these tests use.
        std::uint64_t values = 1;
        for (auto d : dims)
            values *= d;
        w.add_tensor(name, dims, type, std::string(type == 0 ? values * 4 : values / 32 * 36, '\0'));
    }
};

} // namespace

class TestModelConfig : public QObject {
    Q_OBJECT

    QTemporaryDir dir_;
    int counter_ = 0;

    GgufFile load(const TinyModel& model) {
        const std::string path =
            dir_.filePath(QStringLiteral("m%1.gguf").arg(++counter_)).toStdString();
        std::ofstream(path, std::ios::binary) << model.build();
        return GgufFile(path);
    }

    void expect_error(const TinyModel& model, const std::string& problem) {
        const GgufFile file = load(model);
        try {
            kvscope::read_model_config(file);
            QFAIL(qPrintable(QString::fromStdString("no error, expected: " + problem)));
        } catch (const kvscope::Error& e) {
            const std::string message = e.what();
            if (message.find(file.path()) == std::string::npos || message.find(problem) == std::string::npos)
                QFAIL(qPrintable(QString::fromStdString("error '" + message + "' lacks '" + problem + "'")));
        }
    }

private slots:
    void llama() {
        const GgufFile file = load(TinyModel{});
        const ModelConfig c = kvscope::read_model_config(file);
        QCOMPARE(c.architecture, std::string("llama"));
        QCOMPARE(c.name, std::string("tiny"));
        QCOMPARE(c.n_layers, 2u);
        QCOMPARE(c.embedding_dim, 8u);
        QCOMPARE(c.n_heads, 2u);
        QCOMPARE(c.n_kv_heads, 1u);
        QCOMPARE(c.head_dim, 4u);
        QCOMPARE(c.ffn_dim, 16u);
        QCOMPARE(c.vocab_size, 10u);
        QCOMPARE(c.context_length, 64u);
        QCOMPARE(c.rope_theta, 500000.0);
        QCOMPARE(c.norm_eps, static_cast<double>(1e-6f));
        QVERIFY(!c.rope_scaling.has_value());
        QCOMPARE(c.rope_style, RopeStyle::AdjacentPairs);
        QVERIFY(c.tied_embeddings);
        QVERIFY(!c.qkv_bias);
        QVERIFY(!c.rope_freq_factors);

        const auto stats = kvscope::tensor_stats(file);
        const std::uint64_t per_layer = 8 + 8 * 8 + 8 * 4 * 2 + 8 * 8 + 8 + 8 * 16 * 3;
        QCOMPARE(stats.tensors, 2u + 2u * 9u);
        QCOMPARE(stats.parameters, 8u * 10u + 8u + 2u * per_layer);
        QCOMPARE(stats.bytes, 4 * stats.parameters);
        QCOMPARE(stats.by_type.size(), 1u);
    }

    void separateOutputAndLlamaBiases() {
        TinyModel m;
        m.output = true;
        m.bias = true;
        const ModelConfig c = kvscope::read_model_config(load(m));
        QVERIFY(!c.tied_embeddings);
        QVERIFY(c.qkv_bias);
    }

    void qwen2() {
        TinyModel m;
        m.arch = "qwen2";
        m.bias = true;
        m.extra_metadata = [](GgufWriter& w) {
            w.add_string("qwen2.rope.scaling.type", "yarn");
            w.add_f32("qwen2.rope.scaling.factor", 4.0f);
            w.add_u32("qwen2.rope.scaling.original_context_length", 32768);
        };
        const ModelConfig c = kvscope::read_model_config(load(m));
        QCOMPARE(c.architecture, std::string("qwen2"));
        QCOMPARE(c.rope_style, RopeStyle::NeoXHalves);
        QVERIFY(c.qkv_bias);
        QVERIFY(c.rope_scaling.has_value());
        QCOMPARE(c.rope_scaling->type, std::string("yarn"));
        QCOMPARE(c.rope_scaling->factor, 4.0);
        QCOMPARE(c.rope_scaling->original_context, 32768u);
    }

    void olderLinearRopeScaling() {
        TinyModel m;
        m.extra_metadata = [](GgufWriter& w) { w.add_f32("llama.rope.scale_linear", 2.0f); };
        const ModelConfig c = kvscope::read_model_config(load(m));
        QCOMPARE(c.rope_scaling->type, std::string("linear"));
        QCOMPARE(c.rope_scaling->factor, 2.0);
    }

    void headSizeFromKeyLength() {
        TinyModel m;
        m.head_dim = 8; // q = 16 > dim 8
        m.extra_metadata = [](GgufWriter& w) { w.add_u32("llama.attention.key_length", 8); };
        const ModelConfig c = kvscope::read_model_config(load(m));
        QCOMPARE(c.head_dim, 8u);
        QCOMPARE(c.q_dim(), 16u);
        QCOMPARE(c.kv_dim(), 8u);
    }

    void unsupportedArchitecture() {
        TinyModel m;
        m.arch = "gemma";
        expect_error(m, "unsupported architecture 'gemma' (supported: llama, qwen2)");
    }

    void qwen2NeedsBiases() {
        TinyModel m;
        m.arch = "qwen2";
        expect_error(m, "missing tensor 'blk.0.attn_q.bias', which a qwen2 model needs");
    }

    void wrongShape() {
        TinyModel m;
        m.shapes["blk.1.attn_k.weight"] = {8, 8};
        expect_error(m, "tensor 'blk.1.attn_k.weight' has shape [8, 8], expected [8, 4] from the metadata");
    }

    void missingTensor() {
        TinyModel m;
        m.omit.insert("blk.1.ffn_down.weight");
        expect_error(m, "missing tensor 'blk.1.ffn_down.weight', which a llama model needs");
    }

    void unsupportedTensorTypes() {
        TinyModel m;
        m.dim = 32; // a whole Q8_1 block per row
        m.head_dim = 16;
        m.types["blk.0.ffn_up.weight"] = 9; // Q8_1
        expect_error(m, "tensor 'blk.0.ffn_up.weight' has type Q8_1, which kvscope cannot compute with");
        TinyModel norm;
        norm.dim = 32;
        norm.head_dim = 16;
        norm.types["output_norm.weight"] = 9;
        expect_error(norm, "tensor 'output_norm.weight' has type Q8_1, expected F32 for a 1-D tensor");
    }

    void badMetadata() {
        TinyModel heads;
        heads.heads = 3;
        heads.kv_heads = 2;
        heads.dim = 12;
        expect_error(heads, "3 attention heads cannot be shared evenly by 2 KV heads");
        TinyModel rope;
        rope.extra_metadata = [](GgufWriter& w) { w.add_u32("llama.rope.dimension_count", 2); };
        expect_error(rope, "rope.dimension_count 2 differs from the head size 4; partial rotary");
        TinyModel moe;
        moe.extra_metadata = [](GgufWriter& w) { w.add_u32("llama.expert_count", 8); };
        expect_error(moe, "mixture-of-experts models are not supported");
        TinyModel vocab;
        vocab.extra_metadata = [](GgufWriter& w) { w.add_u32("llama.vocab_size", 9); };
        expect_error(vocab, "the tokenizer has 10 tokens but the model's vocabulary is 9");
        TinyModel theta;
        theta.rope_base = -1.0f;
        expect_error(theta, "metadata 'llama.rope.freq_base' is -1, expected a positive number");
    }

    void missingMetadata() {
        GgufWriter w;
        w.add_string("general.architecture", "llama");
        const std::string path = dir_.filePath(QStringLiteral("bare.gguf")).toStdString();
        w.write(path);
        try {
            kvscope::read_model_config(GgufFile(path));
            QFAIL("no error");
        } catch (const kvscope::Error& e) {
            QVERIFY(std::string(e.what()).find("missing metadata 'llama.block_count'") != std::string::npos);
        }
    }
};

QTEST_APPLESS_MAIN(TestModelConfig)
#include "test_model_config.moc"
