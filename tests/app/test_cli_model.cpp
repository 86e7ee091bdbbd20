// kvscope-cli generate, info and bench decode, run as a user runs them:
// outputs checked against the reference models (make-model, which needs
// none: test_cli_make_model).
#include <QtTest>

#include <QJsonArray>
#include <QTemporaryDir>

#include "cli_runner.h"
#include "support/test_models.h"

using kvscope::test::run_cli;

class TestCliModel : public QObject {
    Q_OBJECT
private slots:
    void generate_reproduces_the_reference();
    void generate_streams_text();
    void generate_refuses_a_prompt_past_the_context();
    void info_describes_a_model();
    void a_hybrid_model_frees_its_window_with_the_same_text();
    void bench_decode_reports_bandwidth();
};

void TestCliModel::generate_reproduces_the_reference() {
    KVSCOPE_REQUIRE_MODEL(path, "stories260K-f32.gguf");
    // The first row of stories260K.reference.jsonl ("Once upon a time").
    const auto r = run_cli({"--log-level", "warn", "generate", "--model", path, "--prompt", "Once upon a time", "-n",
                            "8", "--kv-dtype", "f32", "--json"});
    QCOMPARE(r.exit_code, 0);
    const QJsonObject j = r.json();
    QCOMPARE(j["prompt_token_ids"].toArray(), (QJsonArray{1, 403, 407, 261, 378}));
    QCOMPARE(j["generated_token_ids"].toArray(), (QJsonArray{432, 383, 286, 261, 376, 298, 315, 421}));
    QVERIFY(j["text"].toString().startsWith(QStringLiteral(", there was a little")));
    QVERIFY(j["prefill_tokens_per_second"].toDouble() > 0);
    QVERIFY(j["decode_tokens_per_second"].toDouble() > 0);
}

void TestCliModel::generate_streams_text() {
    KVSCOPE_REQUIRE_MODEL(path, "stories260K-f32.gguf");
    const auto r = run_cli({"--log-level", "warn", "generate", "--model", path, "--prompt-ids", "1,403,407,261,378",
                            "-n", "8", "--kv-dtype", "f32"});
    QCOMPARE(r.exit_code, 0);
    QVERIFY2(r.out.startsWith(", there was a little"), r.out.constData());
}

void TestCliModel::generate_refuses_a_prompt_past_the_context() {
    KVSCOPE_REQUIRE_MODEL(path, "stories260K-f32.gguf");
    const auto r = run_cli({"generate", "--model", path, "--prompt-ids", "1,403", "-n", "600"});
    QCOMPARE(r.exit_code, 1);
    QVERIFY2(r.err.contains("exceeds the model's context of 512"), r.err.constData());
}

void TestCliModel::info_describes_a_model() {
    KVSCOPE_REQUIRE_MODEL(path, "tiny-kq-q4_k_m.gguf");
    const auto r = run_cli({"--log-level", "warn", "info", path, "--json"});
    QCOMPARE(r.exit_code, 0);
    const QJsonObject j = r.json();
    QCOMPARE(j["architecture"].toString(), QStringLiteral("llama"));
    QCOMPARE(j["layers"].toInt(), 2);
    QCOMPARE(j["kv_heads"].toInt(), 2);
    QCOMPARE(j["tensor_types"].toObject()["Q4_K"].toObject()["tensors"].toInt(), 12);
    QCOMPARE(j["tensor_types"].toObject()["Q6_K"].toObject()["tensors"].toInt(), 3);
    // 2 layers x 2 KV heads x 64 x 2 (K, V) x 2 bytes.
    QCOMPARE(j["kv_bytes_per_token"].toObject()["f16"].toInt(), 1024);
}

// A Gemma 3 of 6 layers (5 with a 16-token window, 1 global): info counts
// its KV cache groups, and generate gives the same tokens whether the
// window groups free their old blocks or keep them (--swa-full).
void TestCliModel::a_hybrid_model_frees_its_window_with_the_same_text() {
    QTemporaryDir dir;
    const QString model = dir.filePath("g3.gguf");
    QCOMPARE(run_cli({"make-model", "--preset", "gemma3-270m", "--layers", "6", "--vocab", "300", "--ffn", "32",
                      "--window", "16", "--context", "1024", "-o", model})
                 .exit_code,
             0);
    const auto info = run_cli({"--log-level", "warn", "info", model, "--json"});
    QCOMPARE(info.exit_code, 0);
    const QJsonObject groups = info.json()["kv_cache_groups"].toObject();
    QCOMPARE(groups["groups"].toInt(), 6); // one layer a block: the kinds have 1 and 5 layers
    QCOMPARE(groups["kinds"].toArray()[1].toObject()["title"].toString(), QStringLiteral("sliding window 16, 5 layers"));
    // Blocks of 16 tokens of one layer (1 KV head of 256, f16 K and V): 16 KiB.
    // The global layer keeps 1024 tokens, 64 blocks; each window layer
    // ceil((16 - 1 + 512) / 16) + 1 = 34.
    QCOMPARE(groups["f16_bytes_at_context"].toDouble(), double((64 + 5 * 34) * 16384));
    QCOMPARE(groups["f16_bytes_at_context_swa_full"].toDouble(), double(6 * 64 * 16384));

    QStringList ids;
    for (int i = 0; i < 40; ++i)
        ids << QString::number(3 + (i * 37) % 290);
    const QStringList generate = {"--log-level", "warn", "generate", "--model", model, "--prompt-ids",
                                  ids.join(','), "-n", "12", "--ignore-eos", "--json"};
    const auto freeing = run_cli(generate);
    const auto whole = run_cli(generate + QStringList{"--swa-full"});
    QCOMPARE(freeing.exit_code, 0);
    QCOMPARE(whole.exit_code, 0);
    QVERIFY(!freeing.json()["generated_token_ids"].toArray().isEmpty());
    QCOMPARE(freeing.json()["generated_token_ids"], whole.json()["generated_token_ids"]);
}

void TestCliModel::bench_decode_reports_bandwidth() {
    KVSCOPE_REQUIRE_MODEL(path, "tiny-kq-q8_0.gguf");
    const auto r = run_cli({"--log-level", "warn", "bench", "decode", "--model", path, "--threads", "1", "--json"});
    QCOMPARE(r.exit_code, 0);
    const QJsonObject j = r.json();
    for (const char* key : {"prefill_tokens_per_second", "decode_tokens_per_second", "weight_bytes_per_token",
                            "bandwidth_gb_per_s", "bandwidth_fraction"})
        QVERIFY2(j[key].toDouble() > 0, key);
    // tiny-kq, all Q8_0: per layer Q and O 256 x 256, K and V 128 x 256 (2 KV
    // heads of 64), FFN 3 x 768 x 256; plus the 512 x 256 tied output.
    const double values = 2.0 * (2 * 256 * 256 + 2 * 128 * 256 + 3 * 256 * 768) + 512.0 * 256;
    QCOMPARE(j["weight_bytes_per_token"].toDouble(), values / 32 * 34);
}

QTEST_GUILESS_MAIN(TestCliModel)
#include "test_cli_model.moc"
