// kvscope-cli generate, info and bench decode, run as a user runs them:
// outputs checked against the reference models (make-model, which needs
// none: test_cli_make_model).
#include <QtTest>

#include <QJsonArray>

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
