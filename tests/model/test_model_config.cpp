// read_model_config on tiny hand-built files of every supported
// architecture: the values it reads (each family's features and layer
// kinds), and a clear error for each way the metadata or tensors can be
// wrong.
#include <QTemporaryDir>
#include <QTest>

#include <cmath>
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
    // The tensors of the architecture's features (model_families.h).
    bool qk_norm() const { return arch == "qwen3" || arch == "gemma3"; }
    bool post_norms() const { return arch == "gemma2" || arch == "gemma3"; }
    bool fused() const { return arch == "phi3"; }
    std::uint32_t rope_pairs = 0; // > 0: LongRoPE factor tensors of this many pairs
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
        if (rope_pairs > 0) {
            tensor(w, "rope_factors_long.weight", {rope_pairs});
            tensor(w, "rope_factors_short.weight", {rope_pairs});
        }
        for (std::uint32_t l = 0; l < layers; ++l) {
            const std::string b = "blk." + std::to_string(l) + ".";
            tensor(w, b + "attn_norm.weight", {dim});
            if (fused()) {
                tensor(w, b + "attn_qkv.weight", {dim, q + 2 * kv});
            } else {
                tensor(w, b + "attn_q.weight", {dim, q});
                tensor(w, b + "attn_k.weight", {dim, kv});
                tensor(w, b + "attn_v.weight", {dim, kv});
            }
            tensor(w, b + "attn_output.weight", {q, dim});
            tensor(w, b + "ffn_norm.weight", {dim});
            if (fused()) {
                tensor(w, b + "ffn_up.weight", {dim, 2 * ffn});
            } else {
                tensor(w, b + "ffn_gate.weight", {dim, ffn});
                tensor(w, b + "ffn_up.weight", {dim, ffn});
            }
            tensor(w, b + "ffn_down.weight", {ffn, dim});
            if (qk_norm()) {
                tensor(w, b + "attn_q_norm.weight", {head_dim});
                tensor(w, b + "attn_k_norm.weight", {head_dim});
            }
            if (post_norms()) {
                tensor(w, b + "post_attention_norm.weight", {dim});
                tensor(w, b + "post_ffw_norm.weight", {dim});
            }
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
        expect_error(m, "unsupported architecture 'gemma' (supported: llama, qwen2, qwen3, qwen3moe, gemma2, gemma3, phi3, "
                        "smollm3, gpt-oss)");
    }

    void qwen3() {
        TinyModel m;
        m.arch = "qwen3";
        m.head_dim = 8; // 2 heads x 8 on a width of 8
        m.extra_metadata = [](GgufWriter& w) { w.add_u32("qwen3.attention.key_length", 8); };
        const ModelConfig c = kvscope::read_model_config(load(m));
        QCOMPARE(c.head_dim, 8u);
        QCOMPARE(c.q_dim(), 16u);
        QCOMPARE(c.rope_style, RopeStyle::NeoXHalves);
        QVERIFY(c.qk_norm);
        QVERIFY(!c.qkv_bias);
        QVERIFY(!c.has_windows());
        QCOMPARE(c.features(), std::string("QK-norm"));
        QCOMPARE(c.layer_kinds(), std::string("2 layers, all global"));
    }

    void qwen3NeedsQkNorms() {
        TinyModel m;
        m.arch = "qwen3";
        m.omit.insert("blk.1.attn_k_norm.weight");
        expect_error(m, "missing tensor 'blk.1.attn_k_norm.weight', which a qwen3 model needs");
    }

    // Gemma 3: windows on five layers of every six, with their own
    // unscaled RoPE base; the global ones keep the file's base and scaling.
    void gemma3() {
        TinyModel m;
        m.arch = "gemma3";
        m.layers = 8;
        m.extra_metadata = [](GgufWriter& w) {
            w.add_u32("gemma3.attention.sliding_window", 512);
            w.add_string("gemma3.rope.scaling.type", "linear");
            w.add_f32("gemma3.rope.scaling.factor", 8.0f);
        };
        const ModelConfig c = kvscope::read_model_config(load(m));
        QCOMPARE(c.layers.size(), 8u);
        for (std::uint32_t l = 0; l < 8; ++l) {
            const bool global = l == 5;
            QCOMPARE(c.layers[l].window, global ? 0u : 512u);
            QCOMPARE(c.layers[l].rope_theta, global ? 500000.0 : 10000.0);
            QCOMPARE(c.layers[l].rope_scaled, global);
        }
        QVERIFY(c.qk_norm);
        QVERIFY(c.post_norms);
        QCOMPARE(c.ffn_activation, kvscope::FfnActivation::GeluTanh);
        QCOMPARE(c.embedding_scale, std::sqrt(8.0));
        QCOMPARE(c.attention_scale, 1.0 / std::sqrt(4.0));
        QCOMPARE(c.attn_softcap, 0.0);
        QCOMPARE(c.layer_kinds(), std::string("8 layers: 7 sliding-window (512), 1 global"));
    }

    void gemma3WithoutWindowIsGlobal() {
        TinyModel m;
        m.arch = "gemma3";
        const ModelConfig c = kvscope::read_model_config(load(m));
        QVERIFY(!c.has_windows());
    }

    void gemma3PerLayerPattern() {
        TinyModel m;
        m.arch = "gemma3";
        m.layers = 3;
        m.extra_metadata = [](GgufWriter& w) {
            w.add_u32("gemma3.attention.sliding_window", 16);
            w.add_array<std::uint8_t>("gemma3.attention.sliding_window_pattern", GgufWriter::Bool, {0, 1, 1});
        };
        const ModelConfig c = kvscope::read_model_config(load(m));
        QCOMPARE(c.layers[0].window, 0u);
        QCOMPARE(c.layers[1].window, 16u);
        QCOMPARE(c.layers[2].window, 16u);

        m.layers = 2;
        expect_error(m, "has 3 entries for 2 layers");
    }

    // Gemma 2: llama.cpp's defaults where the file is silent: windows of
    // 4096 on even layers, soft-caps 50 and 30, and the output always the
    // token embedding.
    void gemma2Defaults() {
        TinyModel m;
        m.arch = "gemma2";
        m.layers = 4;
        m.output = true;
        const ModelConfig c = kvscope::read_model_config(load(m));
        QCOMPARE(c.layers[0].window, 4096u);
        QCOMPARE(c.layers[1].window, 0u);
        QCOMPARE(c.layers[2].window, 4096u);
        QCOMPARE(c.layers[0].rope_theta, 500000.0); // the swa base defaults to the file's
        QCOMPARE(c.attn_softcap, 50.0);
        QCOMPARE(c.final_softcap, 30.0);
        QVERIFY(!c.qk_norm);
        QVERIFY(c.tied_embeddings);
    }

    // Phi-3: fused matrices, partial rotary, LongRoPE factors chosen by the
    // context as llama.cpp chooses them.
    void phi3() {
        TinyModel m;
        m.arch = "phi3";
        m.rope_pairs = 1;
        m.context = 4096;
        m.extra_metadata = [](GgufWriter& w) {
            w.add_u32("phi3.rope.dimension_count", 2);
            w.add_u32("phi3.rope.scaling.original_context_length", 1024);
            w.add_f32("phi3.rope.scaling.attn_factor", 1.25f);
            w.add_u32("phi3.attention.sliding_window", 262144); // ignored, as llama.cpp ignores it
        };
        ModelConfig c = kvscope::read_model_config(load(m));
        QVERIFY(c.fused_qkv);
        QVERIFY(c.fused_gate_up);
        QCOMPARE(c.rope_dims, 2u);
        QCOMPARE(c.head_dim, 4u);
        QVERIFY(c.rope_freq_factors);
        QVERIFY(c.long_rope);
        QCOMPARE(c.rope_attn_factor, 1.25);
        QVERIFY(!c.has_windows());

        m.context = 1024;
        c = kvscope::read_model_config(load(m));
        QVERIFY(!c.long_rope);

        m.omit.insert("rope_factors_short.weight");
        expect_error(m, "'rope_factors_short.weight' is missing");
    }

    void smollm3LeavesRopeOutOfEveryFourthLayer() {
        TinyModel m;
        m.arch = "smollm3";
        m.layers = 8;
        const ModelConfig c = kvscope::read_model_config(load(m));
        for (std::uint32_t l = 0; l < 8; ++l)
            QCOMPARE(c.layers[l].rope, (l + 1) % 4 != 0);
        QCOMPARE(c.layer_kinds(), std::string("8 layers, all global; 2 without RoPE"));
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
        expect_error(norm, "tensor 'output_norm.weight' has type Q8_1, expected F32 for a norm or bias");
    }

    void badMetadata() {
        TinyModel heads;
        heads.heads = 3;
        heads.kv_heads = 2;
        heads.dim = 12;
        expect_error(heads, "3 attention heads cannot be shared evenly by 2 KV heads");
        TinyModel rope;
        rope.extra_metadata = [](GgufWriter& w) { w.add_u32("llama.rope.dimension_count", 2); };
        expect_error(rope, "rope.dimension_count 2 differs from the head size 4, which a llama model cannot have");
        TinyModel moe;
        moe.extra_metadata = [](GgufWriter& w) {
            w.add_u32("llama.expert_count", 8);
            w.add_u32("llama.expert_used_count", 2);
            w.add_u32("llama.expert_feed_forward_length", 16);
        };
        expect_error(moe, "mixture-of-experts llama models are not supported (experts: qwen3moe, gpt-oss)");
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
