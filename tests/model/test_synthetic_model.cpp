// make-model's files: a preset's shape that the engine loads and runs. The
// writer, the loader and ModelGeometry::parameters() all follow the shape's
// numbers, so a shape cut smaller checks what the full one would at a
// fraction of the cost (drawing the random weights is most of it, and the
// unit tests also run under ASan): llama-15m as it is, and qwen2.5-0.5b
// (qwen2: QKV biases, 14 query heads to 2 KV heads, tied embeddings) with 2
// of its 24 layers and 4096 of its 151936 tokens. And every other family's
// file, read back with our GGUF reader: each metadata key and tensor that
// llama.cpp's loader reads (src/models/<family>.cpp), nothing more (llama.cpp
// refuses a file with a tensor it did not ask for). The mixture-of-experts
// presets (qwen3-30b-a3b, gpt-oss-20b): their files' keys and tensors,
// their parameters with every expert and per token against the published
// numbers, and --experts; that llama.cpp loads and runs them is
// tests/data/llamacpp/make_references.sh's to show (it makes its
// references from them), not a unit test's.
#include <QtTest>

#include <QTemporaryDir>

#include <map>
#include <memory>

#include "engine/core/error.h"
#include "engine/model/gguf_file.h"
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
    void files_hold_what_llama_cpp_reads_data();
    void files_hold_what_llama_cpp_reads();
    void layer_kinds_follow_the_config();
    void cuts_keep_the_layer_pattern_and_check_their_ranges();
    void mixtures_of_experts_count_every_expert_and_the_active_ones();
    void expert_cuts_check_their_ranges();
    void geometries_a_gguf_cannot_express_are_refused();
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
    Engine engine(config_for_one_request(config, model->config(), prompt.size() + 3), model);
    RequestParams params;
    params.max_new_tokens = 3;
    params.ignore_eos = true;
    QCOMPARE(run_to_completion(engine, prompt, params).tokens.size(), std::size_t{3});
}

namespace {

// A scalar's value: an integer, a float (7 digits) or a string.
QString value_text(const GgufFile& f, std::string_view key) {
    try {
        return QString::number(*f.get_uint(key));
    } catch (const Error&) {
    }
    try {
        return QString::number(*f.get_float(key), 'g', 7);
    } catch (const Error&) {
    }
    return QString::fromStdString(*f.get_string(key));
}

// "key=value" for every metadata key of the architecture's own (prefixed
// with it) and the tensors' "name=d0xd1" (ggml order: row length first).
std::map<QString, QString> metadata_of(const GgufFile& f, const std::string& arch) {
    std::map<QString, QString> m;
    for (const std::string_view key : f.metadata_keys()) {
        if (key.rfind(arch + ".", 0) != 0)
            continue;
        const QString k = QString::fromStdString(std::string(key.substr(arch.size() + 1)));
        m[k] = value_text(f, key);
    }
    return m;
}

std::map<QString, QString> tensors_of(const GgufFile& f) {
    std::map<QString, QString> t;
    for (const GgufTensorInfo& info : f.tensors()) {
        QStringList dims;
        for (const std::uint64_t d : info.dims)
            dims << QString::number(d);
        t[QString::fromStdString(info.name)] = dims.join('x');
    }
    return t;
}

// "a=b,c=d" as a map.
std::map<QString, QString> pairs(const QString& text) {
    std::map<QString, QString> m;
    for (const QString& pair : text.split(',', Qt::SkipEmptyParts))
        m[pair.section('=', 0, 0)] = pair.section('=', 1);
    return m;
}

} // namespace

// Each row: a preset cut small (its layer kinds kept), the metadata keys
// convert_hf_to_gguf.py writes for it, and the tensors llama.cpp's loader
// creates: of layer 0 (every layer has the same) and outside the layers.
void TestSyntheticModel::files_hold_what_llama_cpp_reads_data() {
    QTest::addColumn<QString>("preset");
    QTest::addColumn<int>("layers");
    QTest::addColumn<QString>("metadata");
    QTest::addColumn<QString>("layer_tensors");
    QTest::addColumn<QString>("other_tensors");
    const QString embd = "token_embd.weight=%1x300,output_norm.weight=%1";
    QTest::newRow("qwen3-0.6b") << "qwen3-0.6b" << 2
        << "block_count=2,context_length=40960,embedding_length=1024,feed_forward_length=64,attention.head_count=16,"
           "attention.head_count_kv=8,attention.key_length=128,attention.value_length=128,"
           "attention.layer_norm_rms_epsilon=1e-06,rope.freq_base=1000000,rope.dimension_count=128"
        << "attn_norm.weight=1024,attn_q.weight=1024x2048,attn_k.weight=1024x1024,attn_v.weight=1024x1024,"
           "attn_output.weight=2048x1024,attn_q_norm.weight=128,attn_k_norm.weight=128,ffn_norm.weight=1024,"
           "ffn_gate.weight=1024x64,ffn_up.weight=1024x64,ffn_down.weight=64x1024"
        << embd.arg(1024);
    QTest::newRow("qwen3-8b, untied") << "qwen3-8b" << 1
        << "block_count=1,context_length=40960,embedding_length=4096,feed_forward_length=64,attention.head_count=32,"
           "attention.head_count_kv=8,attention.key_length=128,attention.value_length=128,"
           "attention.layer_norm_rms_epsilon=1e-06,rope.freq_base=1000000,rope.dimension_count=128"
        << "attn_norm.weight=4096,attn_q.weight=4096x4096,attn_k.weight=4096x1024,attn_v.weight=4096x1024,"
           "attn_output.weight=4096x4096,attn_q_norm.weight=128,attn_k_norm.weight=128,ffn_norm.weight=4096,"
           "ffn_gate.weight=4096x64,ffn_up.weight=4096x64,ffn_down.weight=64x4096"
        << embd.arg(4096) + ",output.weight=4096x300";
    const QString gemma3_layer =
        "attn_norm.weight=%1,attn_q.weight=%1x%2,attn_k.weight=%1x%3,attn_v.weight=%1x%3,attn_output.weight=%2x%1,"
        "attn_q_norm.weight=256,attn_k_norm.weight=256,post_attention_norm.weight=%1,ffn_norm.weight=%1,"
        "ffn_gate.weight=%1x64,ffn_up.weight=%1x64,ffn_down.weight=64x%1,post_ffw_norm.weight=%1";
    QTest::newRow("gemma3-270m") << "gemma3-270m" << 6
        << "block_count=6,context_length=32768,embedding_length=640,feed_forward_length=64,attention.head_count=4,"
           "attention.head_count_kv=1,attention.key_length=256,attention.value_length=256,"
           "attention.layer_norm_rms_epsilon=1e-06,rope.freq_base=1000000,rope.freq_base_swa=10000,"
           "rope.dimension_count=256,attention.sliding_window=512"
        << gemma3_layer.arg(640).arg(1024).arg(256) << embd.arg(640);
    QTest::newRow("gemma3-4b, linear RoPE scaling") << "gemma3-4b" << 1
        << "block_count=1,context_length=131072,embedding_length=2560,feed_forward_length=64,attention.head_count=8,"
           "attention.head_count_kv=4,attention.key_length=256,attention.value_length=256,"
           "attention.layer_norm_rms_epsilon=1e-06,rope.freq_base=1000000,rope.freq_base_swa=10000,"
           "rope.dimension_count=256,attention.sliding_window=1024,rope.scaling.type=linear,rope.scaling.factor=8"
        << gemma3_layer.arg(2560).arg(2048).arg(1024) << embd.arg(2560);
    QTest::newRow("gemma2-2b") << "gemma2-2b" << 2
        << "block_count=2,context_length=8192,embedding_length=2304,feed_forward_length=64,attention.head_count=8,"
           "attention.head_count_kv=4,attention.key_length=256,attention.value_length=256,"
           "attention.layer_norm_rms_epsilon=1e-06,rope.freq_base=10000,rope.dimension_count=256,"
           "attention.sliding_window=4096,attn_logit_softcapping=50,final_logit_softcapping=30"
        << "attn_norm.weight=2304,attn_q.weight=2304x2048,attn_k.weight=2304x1024,attn_v.weight=2304x1024,"
           "attn_output.weight=2048x2304,post_attention_norm.weight=2304,ffn_norm.weight=2304,"
           "ffn_gate.weight=2304x64,ffn_up.weight=2304x64,ffn_down.weight=64x2304,post_ffw_norm.weight=2304"
        << embd.arg(2304);
    // attn_factor: sqrt(1 + ln(131072 / 4096) / ln(4096)), Phi3MiniModel's.
    QTest::newRow("phi-4-mini") << "phi-4-mini" << 1
        << "block_count=1,context_length=131072,embedding_length=3072,feed_forward_length=64,attention.head_count=24,"
           "attention.head_count_kv=8,attention.layer_norm_rms_epsilon=1e-05,rope.freq_base=10000,"
           "rope.dimension_count=96,rope.scaling.original_context_length=4096,rope.scaling.attn_factor=1.190238,"
           "attention.sliding_window=262144"
        << "attn_norm.weight=3072,attn_qkv.weight=3072x5120,attn_output.weight=3072x3072,ffn_norm.weight=3072,"
           "ffn_up.weight=3072x128,ffn_down.weight=64x3072"
        << embd.arg(3072) + ",rope_factors_long.weight=48,rope_factors_short.weight=48";
    QTest::newRow("smollm3-3b") << "smollm3-3b" << 4
        << "block_count=4,context_length=65536,embedding_length=2048,feed_forward_length=64,attention.head_count=16,"
           "attention.head_count_kv=4,attention.layer_norm_rms_epsilon=1e-06,rope.freq_base=5000000,"
           "rope.dimension_count=128"
        << "attn_norm.weight=2048,attn_q.weight=2048x2048,attn_k.weight=2048x512,attn_v.weight=2048x512,"
           "attn_output.weight=2048x2048,ffn_norm.weight=2048,ffn_gate.weight=2048x64,ffn_up.weight=2048x64,"
           "ffn_down.weight=64x2048"
        << embd.arg(2048);
    // Mixtures of experts, cut to as many experts as each token uses (the
    // fewest --experts allows): ffn_gate_inp {dim, experts} and the experts'
    // 3-D {dim, ffn, experts} / {ffn, dim, experts}; Qwen3's QK-norm.
    QTest::newRow("qwen3-30b-a3b") << "qwen3-30b-a3b" << 1
        << "block_count=1,context_length=40960,embedding_length=2048,feed_forward_length=64,expert_count=8,"
           "expert_used_count=8,attention.head_count=32,attention.head_count_kv=4,attention.key_length=128,"
           "attention.value_length=128,attention.layer_norm_rms_epsilon=1e-06,rope.freq_base=1000000,"
           "rope.dimension_count=128,expert_feed_forward_length=64"
        << "attn_norm.weight=2048,attn_q.weight=2048x4096,attn_k.weight=2048x512,attn_v.weight=2048x512,"
           "attn_output.weight=4096x2048,attn_q_norm.weight=128,attn_k_norm.weight=128,ffn_norm.weight=2048,"
           "ffn_gate_inp.weight=2048x8,ffn_gate_exps.weight=2048x64x8,ffn_up_exps.weight=2048x64x8,"
           "ffn_down_exps.weight=64x2048x8"
        << embd.arg(2048) + ",output.weight=2048x300";
    // gpt-oss: biases on Q/K/V/O, router and experts ({ffn or dim,
    // experts}), a sink per head, its FFN's norm named post_attention_norm,
    // YaRN with gpt-oss's beta_fast/slow, windows of 128 on alternate layers
    // (llama.cpp's default pattern for gpt-oss: no pattern key).
    QTest::newRow("gpt-oss-20b") << "gpt-oss-20b" << 1
        << "block_count=1,context_length=131072,embedding_length=2880,feed_forward_length=64,expert_count=4,"
           "expert_used_count=4,attention.head_count=64,attention.head_count_kv=8,attention.key_length=64,"
           "attention.value_length=64,attention.layer_norm_rms_epsilon=1e-05,rope.freq_base=150000,"
           "rope.dimension_count=64,rope.scaling.type=yarn,rope.scaling.factor=32,"
           "rope.scaling.original_context_length=4096,rope.scaling.yarn_beta_fast=32,"
           "rope.scaling.yarn_beta_slow=1,attention.sliding_window=128,expert_feed_forward_length=64"
        << "attn_norm.weight=2880,attn_q.weight=2880x4096,attn_k.weight=2880x512,attn_v.weight=2880x512,"
           "attn_output.weight=4096x2880,attn_q.bias=4096,attn_k.bias=512,attn_v.bias=512,"
           "attn_output.bias=2880,attn_sinks.weight=64,post_attention_norm.weight=2880,"
           "ffn_gate_inp.weight=2880x4,ffn_gate_exps.weight=2880x64x4,ffn_up_exps.weight=2880x64x4,"
           "ffn_down_exps.weight=64x2880x4,ffn_gate_inp.bias=4,ffn_gate_exps.bias=64x4,ffn_up_exps.bias=64x4,"
           "ffn_down_exps.bias=2880x4"
        << embd.arg(2880) + ",output.weight=2880x300";
}

void TestSyntheticModel::files_hold_what_llama_cpp_reads() {
    QFETCH(QString, preset);
    QFETCH(int, layers);
    QFETCH(QString, metadata);
    QFETCH(QString, layer_tensors);
    QFETCH(QString, other_tensors);
    QTemporaryDir dir;
    const std::string path = dir.filePath("m.gguf").toStdString();
    GeometryCut cut;
    cut.layers = static_cast<std::uint32_t>(layers);
    cut.vocab = 300;
    cut.ffn = 64;
    const ModelGeometry& whole = find_model_preset(preset.toStdString());
    cut.experts = whole.n_experts_used; // 0 for a dense model: its own
    const ModelGeometry g = cut_geometry(whole, cut);
    write_synthetic_model(g, GgmlType::Q8_0, 3, path);

    const GgufFile f(path);
    QCOMPARE(f.get_string("general.architecture").value_or(""), g.architecture);
    QCOMPARE(metadata_of(f, g.architecture), pairs(metadata));
    std::map<QString, QString> expected = pairs(other_tensors);
    for (int l = 0; l < layers; ++l)
        for (const auto& [name, dims] : pairs(layer_tensors))
            expected[QString("blk.%1.").arg(l) + name] = dims;
    QCOMPARE(tensors_of(f), expected);
    QCOMPARE(tensor_stats(f).parameters, g.parameters());
    if (g.has_longrope()) {
        const GgufTensorInfo* longs = f.find_tensor("rope_factors_long.weight");
        QCOMPARE(reinterpret_cast<const float*>(longs->data)[47], 47.77f);
    }
    if (g.is_moe()) { // the router in F32 whatever the type, as convert_hf_to_gguf.py writes it
        QCOMPARE(f.find_tensor("blk.0.ffn_gate_inp.weight")->type, GgmlType::F32);
        QCOMPARE(f.find_tensor("blk.0.ffn_up_exps.weight")->type, GgmlType::Q8_0);
    }
}

// Which layers see a window and which run without RoPE, as each config.json
// describes them (Hugging Face's layer_types and no_rope_layers).
void TestSyntheticModel::layer_kinds_follow_the_config() {
    auto windows = [](const char* preset, std::uint32_t layers) {
        QString kinds;
        for (std::uint32_t l = 0; l < layers; ++l)
            kinds += find_model_preset(preset).is_window_layer(l) ? 'w' : 'g';
        return kinds;
    };
    QCOMPARE(windows("gemma3-1b", 13), QString("wwwwwgwwwwwgw"));
    QCOMPARE(windows("gemma2-2b", 5), QString("wgwgw"));
    QCOMPARE(windows("qwen3-0.6b", 3), QString("ggg"));
    QCOMPARE(windows("phi-4-mini", 3), QString("ggg")); // its file's window is ignored, as llama.cpp ignores it
    QCOMPARE(windows("gpt-oss-20b", 5), QString("wgwgw")); // layer_types: sliding_attention first
    QCOMPARE(windows("qwen3-30b-a3b", 3), QString("ggg"));
    const ModelGeometry& smol = find_model_preset("smollm3-3b");
    QString rope;
    for (std::uint32_t l = 0; l < 9; ++l)
        rope += smol.uses_rope(l) ? 'r' : '-';
    QCOMPARE(rope, QString("rrr-rrr-r"));
    QCOMPARE(find_model_preset("qwen3-0.6b").kv().head_dim, 128u);
    QCOMPARE(find_model_preset("phi-4-mini").rotated_dims(), 96u);
}

void TestSyntheticModel::cuts_keep_the_layer_pattern_and_check_their_ranges() {
    const ModelGeometry& gemma = find_model_preset("gemma3-270m");
    GeometryCut cut;
    cut.layers = 6;
    cut.window = 64;
    const ModelGeometry g = cut_geometry(gemma, cut);
    QCOMPARE(g.n_layers, 6u);
    QCOMPARE(g.sliding_window, 64u);
    QVERIFY(g.is_window_layer(4) && !g.is_window_layer(5));
    QVERIFY(g.name.find("6 of 18 layers") != std::string::npos);
    QCOMPARE(g.parameters() < gemma.parameters(), true);
    for (const GeometryCut bad : {GeometryCut{.layers = 19}, GeometryCut{.vocab = 100}, GeometryCut{.window = 513},
                                  GeometryCut{.ffn = 100}})
        QVERIFY_THROWS_EXCEPTION(Error, cut_geometry(gemma, bad));
    QVERIFY_THROWS_EXCEPTION(Error, cut_geometry(find_model_preset("qwen3-0.6b"), GeometryCut{.window = 64}));
}

// Every expert counts towards parameters() (the file holds them all); a
// token reads the router, n_experts_used experts and one embedding row.
// Published: gpt-oss-20b 20.91B total, 3.61B active (OpenAI's model card,
// which counts the output matrix and not the embedding, as this does);
// Qwen3-30B-A3B 30.5B total, 29.9B without embeddings, 3.3B active (its
// model card, which counts both vocabulary tables whole: 3.04B here plus
// the 151,935 embedding rows a token does not read, 0.31B, is 3.35B).
void TestSyntheticModel::mixtures_of_experts_count_every_expert_and_the_active_ones() {
    const ModelGeometry& gpt_oss = find_model_preset("gpt-oss-20b");
    QCOMPARE(gpt_oss.parameters(), Q_UINT64_C(20914757184));
    QCOMPARE(gpt_oss.active_parameters(), Q_UINT64_C(3608310144));
    const ModelGeometry& qwen = find_model_preset("qwen3-30b-a3b");
    const std::uint64_t qwen_embedding = std::uint64_t{qwen.vocab} * qwen.dim;
    QCOMPARE(qwen.parameters(), Q_UINT64_C(30532122624));
    QCOMPARE(qwen.parameters() - 2 * qwen_embedding, Q_UINT64_C(29909792768));
    QCOMPARE(qwen.active_parameters(), Q_UINT64_C(3041869824));
    QCOMPARE(qwen.active_parameters() + qwen_embedding - qwen.dim, Q_UINT64_C(3353032704));
    // A dense model reads all but the embedding rows of other tokens (its
    // tied embedding whole, as the output).
    const ModelGeometry& llama = find_model_preset("llama-2-7b");
    QCOMPARE(llama.active_parameters(), llama.parameters() - std::uint64_t{llama.vocab - 1} * llama.dim);
    QCOMPARE(find_model_preset("qwen3-0.6b").active_parameters(), find_model_preset("qwen3-0.6b").parameters());
    // What `info` and the app count from a file's tensors is the same
    // number (one definition, reached from the shape and from the file).
    QTemporaryDir dir;
    for (const char* name : {"gpt-oss-20b", "qwen3-30b-a3b", "llama-42m"}) {
        const ModelGeometry& preset = find_model_preset(name);
        const ModelGeometry g = cut_geometry(preset, preset.is_moe() ? GeometryCut{.layers = 1, .vocab = 300, .ffn = 64,
                                                                                 .experts = preset.n_experts_used + 1}
                                                                      : GeometryCut{.layers = 1});
        const std::string path = dir.filePath(QString::fromLatin1(name)).toStdString();
        write_synthetic_model(g, GgmlType::F16, 1, path);
        const TensorStats stats = tensor_stats(GgufFile(path));
        QCOMPARE(stats.parameters, g.parameters());
        QCOMPARE(stats.active_parameters(g.n_experts, g.n_experts_used), g.active_parameters());
    }
}

void TestSyntheticModel::expert_cuts_check_their_ranges() {
    const ModelGeometry& gpt_oss = find_model_preset("gpt-oss-20b");
    const ModelGeometry g = cut_geometry(gpt_oss, {.layers = 2, .ffn = 512, .experts = 8});
    QCOMPARE(g.n_experts, 8u);
    QCOMPARE(g.n_experts_used, 4u);
    QCOMPARE(g.expert_ffn_dim, 512u);
    QVERIFY2(g.name.find("2 of 24 layers, FFN 512, 8 of 32 experts") != std::string::npos, g.name.c_str());
    // A token leaves 4 of the 8 experts of each layer unread, each with its
    // gate, up, down and their biases, and all embedding rows but its own.
    constexpr std::uint64_t kExpert = 3 * 2880 * 512 + 2 * 512 + 2880;
    QCOMPARE(g.parameters() - g.active_parameters(), 2 * 4 * kExpert + std::uint64_t{201088 - 1} * 2880);
    for (const GeometryCut bad : {GeometryCut{.experts = 3}, GeometryCut{.experts = 33}, GeometryCut{.ffn = 2912}})
        QVERIFY_THROWS_EXCEPTION(Error, cut_geometry(gpt_oss, bad));
    // Qwen3-30B-A3B's --ffn is its experts' width (768), not its unused 6144.
    QVERIFY_THROWS_EXCEPTION(Error, cut_geometry(find_model_preset("qwen3-30b-a3b"), GeometryCut{.ffn = 1024}));
    QVERIFY_THROWS_EXCEPTION(Error, cut_geometry(find_model_preset("qwen3-0.6b"), GeometryCut{.experts = 4}));
}

void TestSyntheticModel::geometries_a_gguf_cannot_express_are_refused() {
    QTemporaryDir dir;
    const std::string path = dir.filePath("m.gguf").toStdString();
    ModelGeometry smol = find_model_preset("smollm3-3b");
    smol.no_rope_period = 3; // llama.cpp hard-codes every 4th
    QVERIFY_THROWS_EXCEPTION(Error, write_synthetic_model(smol, GgmlType::F32, 1, path));
    ModelGeometry gemma = find_model_preset("gemma2-2b");
    gemma.query_pre_attn_scalar = 144; // llama.cpp scales by 1/sqrt(head_dim) but for the 27B
    QVERIFY_THROWS_EXCEPTION(Error, write_synthetic_model(gemma, GgmlType::F32, 1, path));
    ModelGeometry tied_gpt_oss = cut_geometry(find_model_preset("gpt-oss-20b"), {.layers = 1, .vocab = 300});
    tied_gpt_oss.tied_embeddings = true; // llama.cpp's gpt-oss requires output.weight
    QVERIFY_THROWS_EXCEPTION(Error, write_synthetic_model(tied_gpt_oss, GgmlType::F32, 1, path));
    ModelGeometry qwen3_with_experts = find_model_preset("qwen3-0.6b");
    qwen3_with_experts.n_experts = 8; // qwen3 files have a dense FFN; experts are qwen3moe's
    qwen3_with_experts.n_experts_used = 2;
    qwen3_with_experts.expert_ffn_dim = 64;
    QVERIFY_THROWS_EXCEPTION(Error, write_synthetic_model(qwen3_with_experts, GgmlType::F32, 1, path));
}

QTEST_APPLESS_MAIN(TestSyntheticModel)
#include "test_synthetic_model.moc"
