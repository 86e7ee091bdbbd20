// The real GGUF files in ../shared/models: their configuration, tensor
// types, and dequantized weights compared with the f32 files they were
// quantized from by llama.cpp (an independent quantizer).
#include <QTest>

#include <cmath>
#include <map>

#include "engine/core/error.h"
#include "engine/model/model_config.h"
#include "engine/model/tensor_stats.h"
#include "support/test_models.h"

using kvscope::GgmlType;
using kvscope::GgufFile;
using kvscope::GgufTensorInfo;

namespace {

std::vector<float> dequantize(const GgufTensorInfo& t) {
    std::uint64_t n = 1;
    for (auto d : t.dims)
        n *= d;
    std::vector<float> values(n);
    kvscope::dequantize_row(t.type, t.data, values.data(), n);
    return values;
}

std::map<GgmlType, std::uint64_t> type_counts(const GgufFile& file) {
    std::map<GgmlType, std::uint64_t> counts;
    for (const auto& s : kvscope::tensor_stats(file).by_type)
        counts[s.type] = s.tensors;
    return counts;
}

// Root-mean-square error of `got` relative to the RMS of `want`.
double relative_rms_error(const std::vector<float>& got, const std::vector<float>& want) {
    double error = 0, norm = 0;
    for (std::size_t i = 0; i < want.size(); ++i) {
        error += (got[i] - want[i]) * static_cast<double>(got[i] - want[i]);
        norm += want[i] * static_cast<double>(want[i]);
    }
    return std::sqrt(error / norm);
}

// Symmetric 32-value block quantizers (Q8_0, Q4_0, Q5_0) scale by the
// block's largest magnitude: no value is off by more than amax * step.
void check_block_error(const std::vector<float>& got, const std::vector<float>& want, double step) {
    QCOMPARE(got.size(), want.size());
    for (std::size_t b = 0; b < want.size(); b += 32) {
        double amax = 0;
        for (std::size_t i = b; i < b + 32; ++i)
            amax = std::max(amax, std::fabs(static_cast<double>(want[i])));
        for (std::size_t i = b; i < b + 32; ++i)
            if (std::fabs(got[i] - want[i]) > amax * step + 1e-7)
                QFAIL(qPrintable(QStringLiteral("value %1: %2 vs f32 %3 (block max %4)")
                                     .arg(i).arg(got[i]).arg(want[i]).arg(amax)));
    }
}

} // namespace

class TestModelFiles : public QObject {
    Q_OBJECT

    // For loops over files, once the slot has QSKIPped if the folder is absent.
    static std::string model_path(const char* name) {
        return kvscope::test::test_model_path(QString::fromLatin1(name)).toStdString();
    }

    // Dequantizes `name` from `quantized` and from `reference` (f32).
    static std::pair<std::vector<float>, std::vector<float>>
    both(const GgufFile& quantized, const GgufFile& reference, const char* name, GgmlType type) {
        const GgufTensorInfo* q = quantized.find_tensor(name);
        const GgufTensorInfo* f = reference.find_tensor(name);
        if (q == nullptr || f == nullptr || q->type != type || f->type != GgmlType::F32 ||
            q->dims != f->dims)
            qFatal("%s: unexpected tensor set", name);
        return {dequantize(*q), dequantize(*f)};
    }

private slots:
    void stories260kConfig() {
        KVSCOPE_REQUIRE_MODEL(path, "stories260K-f32.gguf");
        const GgufFile file(path.toStdString());
        const auto c = kvscope::read_model_config(file);
        QCOMPARE(c.architecture, std::string("llama"));
        QCOMPARE(c.embedding_dim, 64u);
        QCOMPARE(c.n_layers, 5u);
        QCOMPARE(c.n_heads, 8u);
        QCOMPARE(c.n_kv_heads, 4u);
        QCOMPARE(c.head_dim, 8u);
        QCOMPARE(c.ffn_dim, 172u);
        QCOMPARE(c.vocab_size, 512u);
        QCOMPARE(c.context_length, 512u);
        QVERIFY(c.tied_embeddings);
        QVERIFY(!c.qkv_bias);
        QCOMPARE(c.rope_style, kvscope::RopeStyle::AdjacentPairs);
        QCOMPARE(c.rope_theta, 10000.0);
        QVERIFY(std::fabs(c.norm_eps - 1e-5) < 1e-9);
        const auto stats = kvscope::tensor_stats(file);
        QCOMPARE(stats.parameters, 260032u); // the README's count
        QCOMPARE(stats.tensors, 47u);
    }

    void stories260kVariants() {
        KVSCOPE_REQUIRE_MODEL(folder, "stories260K-f16.gguf");
        for (const char* name : {"stories260K-f16.gguf", "stories260K-q8_0.gguf",
                                 "stories260K-q4_0.gguf", "stories260K-q6_k.gguf"}) {
            const GgufFile file(model_path(name));
            const auto c = kvscope::read_model_config(file);
            QCOMPARE(c.vocab_size, 512u);
            QCOMPARE(kvscope::tensor_stats(file).parameters, 260032u);
        }
        KVSCOPE_REQUIRE_MODEL(path, "stories260K-q4_k_m.gguf");
        const GgufFile file(path.toStdString());
        kvscope::read_model_config(file);
        const std::map<GgmlType, std::uint64_t> expected{
            {GgmlType::Q5_0, 28}, {GgmlType::Q8_0, 3}, {GgmlType::F16, 5}, {GgmlType::F32, 11}};
        QCOMPARE(type_counts(file), expected);
    }

    void tinyKqConfigAndTypes() {
        KVSCOPE_REQUIRE_MODEL(path, "tiny-kq-q4_k_m.gguf");
        const GgufFile file(path.toStdString());
        const auto c = kvscope::read_model_config(file);
        QCOMPARE(c.embedding_dim, 256u);
        QCOMPARE(c.n_layers, 2u);
        QCOMPARE(c.n_heads, 4u);
        QCOMPARE(c.n_kv_heads, 2u);
        QCOMPARE(c.head_dim, 64u);
        QCOMPARE(c.ffn_dim, 768u);
        QCOMPARE(c.context_length, 256u);
        QCOMPARE(c.vocab_size, 512u);
        QVERIFY(c.tied_embeddings);
        const std::map<GgmlType, std::uint64_t> expected{
            {GgmlType::Q4_K, 12}, {GgmlType::Q6_K, 3}, {GgmlType::F32, 5}};
        QCOMPARE(type_counts(file), expected);
        QCOMPARE(file.find_tensor("blk.1.attn_v.weight")->type, GgmlType::Q6_K);
    }

    void vocabularyOnlyFilesLoad() {
        KVSCOPE_REQUIRE_MODEL(folder, "tokenizers");
        for (const char* name : {"tokenizers/llama2-spm-vocab.gguf", "tokenizers/gpt2-bpe-vocab.gguf",
                                 "tokenizers/llama3-bpe-vocab.gguf"}) {
            const GgufFile file(model_path(name));
            QVERIFY(file.tensors().empty());
            const auto tokens = file.get_string_array("tokenizer.ggml.tokens");
            QVERIFY(tokens.has_value() && tokens->size() > 1000);
            QCOMPARE(*file.get_array_length("tokenizer.ggml.tokens"), tokens->size());
        }
    }

    // Q8_0: d = amax / 127 and values round to the nearest step, so no
    // value is off by more than half a step, plus up to 127 times the f16
    // rounding of d (2^-11 relative).
    void q8_0MatchesF32() {
        KVSCOPE_REQUIRE_MODEL(f32_path, "stories260K-f32.gguf");
        KVSCOPE_REQUIRE_MODEL(q8_path, "stories260K-q8_0.gguf");
        const GgufFile f32(f32_path.toStdString()), q8(q8_path.toStdString());
        const auto [got, want] = both(q8, f32, "token_embd.weight", GgmlType::Q8_0);
        check_block_error(got, want, (0.5 + 127 * 0x1p-11) / 127);
        QVERIFY(relative_rms_error(got, want) < 0.01);
    }

    // Q4_0: d = max / -8; the value opposite the max may clamp at 15, so
    // the bound is one step, not half.
    void q4_0MatchesF32() {
        KVSCOPE_REQUIRE_MODEL(f32_path, "stories260K-f32.gguf");
        KVSCOPE_REQUIRE_MODEL(q4_path, "stories260K-q4_0.gguf");
        const GgufFile f32(f32_path.toStdString()), q4(q4_path.toStdString());
        const auto [got, want] = both(q4, f32, "blk.0.attn_q.weight", GgmlType::Q4_0);
        check_block_error(got, want, (1 + 8 * 0x1p-11) / 8);
    }

    void q5_0MatchesF32() {
        KVSCOPE_REQUIRE_MODEL(f32_path, "stories260K-f32.gguf");
        KVSCOPE_REQUIRE_MODEL(q_path, "stories260K-q4_k_m.gguf");
        const GgufFile f32(f32_path.toStdString()), q(q_path.toStdString());
        const auto [got, want] = both(q, f32, "blk.3.ffn_gate.weight", GgmlType::Q5_0);
        check_block_error(got, want, (1 + 16 * 0x1p-11) / 16);
    }

    void f16MatchesF32() {
        KVSCOPE_REQUIRE_MODEL(f32_path, "stories260K-f32.gguf");
        KVSCOPE_REQUIRE_MODEL(f16_path, "stories260K-f16.gguf");
        const GgufFile f32(f32_path.toStdString()), f16(f16_path.toStdString());
        const auto [got, want] = both(f16, f32, "blk.4.ffn_down.weight", GgmlType::F16);
        for (std::size_t i = 0; i < want.size(); ++i)
            QVERIFY(std::fabs(got[i] - want[i]) <= std::fabs(want[i]) * 0x1p-11 + 0x1p-25);
    }

    // K-quants fit a scale and min per sub-block, so bound the overall
    // error: a wrong bit position or scale order gives errors near 100%.
    void kQuantsMatchF32() {
        KVSCOPE_REQUIRE_MODEL(f32_path, "tiny-kq-f32.gguf");
        KVSCOPE_REQUIRE_MODEL(q4k_path, "tiny-kq-q4_k_m.gguf");
        KVSCOPE_REQUIRE_MODEL(q6k_path, "tiny-kq-q6_k.gguf");
        const GgufFile f32(f32_path.toStdString()), q4k(q4k_path.toStdString()),
            q6k(q6k_path.toStdString());
        const auto [q4_got, q4_want] = both(q4k, f32, "blk.0.attn_q.weight", GgmlType::Q4_K);
        const double q4_error = relative_rms_error(q4_got, q4_want);
        const auto [q6_got, q6_want] = both(q6k, f32, "blk.0.ffn_up.weight", GgmlType::Q6_K);
        const double q6_error = relative_rms_error(q6_got, q6_want);
        const auto [e_got, e_want] = both(q4k, f32, "token_embd.weight", GgmlType::Q6_K);
        const double embd_error = relative_rms_error(e_got, e_want);
        qInfo("relative RMS error: Q4_K %.4f, Q6_K %.4f, Q6_K token_embd %.4f", q4_error,
              q6_error, embd_error);
        QVERIFY(q4_error < 0.12);
        QVERIFY(q6_error < 0.03);
        QVERIFY(embd_error < 0.03);
    }
};

QTEST_APPLESS_MAIN(TestModelFiles)
#include "test_model_files.moc"
