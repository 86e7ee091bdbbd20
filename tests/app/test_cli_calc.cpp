// kvscope-cli calc, run as a process: JSON keys and values, and errors.
#include <QtTest>

#include "cli_runner.h"
#include "support/test_models.h"

using kvscope::test::run_cli;

class TestCliCalc : public QObject {
    Q_OBJECT
private slots:
    void json_answers_for_requested_and_every_dtype();
    void text_table_lists_every_dtype();
    void reads_geometry_from_a_gguf();
    void bad_input_is_a_clear_error();
    void list_shows_heads_and_layer_kinds();
};

void TestCliCalc::json_answers_for_requested_and_every_dtype() {
    const auto r = run_cli({"calc", "--preset", "llama-2-7b", "--tokens", "4096", "--seqs", "3", "--kv-dtype", "int8",
                            "--gpu", "a100-80gb", "--json"});
    QCOMPARE(r.exit_code, 0);
    const QJsonObject j = r.json();
    // int8: 32 layers x 32 heads x 2 x (128 + 2-byte scale) = 266,240 bytes per token.
    QCOMPARE(j["bytes_per_token"].toInteger(), 266240);
    QCOMPARE(j["bytes_per_sequence"].toInteger(), 266240LL * 4096);
    QCOMPARE(j["total_bytes"].toInteger(), 266240LL * 4096 * 3);
    QVERIFY(j.contains("sequences_that_fit"));
    const QJsonObject f16 = j["by_dtype"].toObject()["f16"].toObject();
    QCOMPARE(f16["bytes_per_token"].toInteger(), 512 * 1024);
    // 80 GiB x 0.9 - 6.74e9 f16 weights (2 bytes each) over 2 GiB per sequence.
    const double budget = 81920.0 * 1024 * 1024 * 0.9 - 6738415616.0 * 2;
    QCOMPARE(f16["sequences_that_fit"].toInteger(), static_cast<qint64>(budget / (2.0 * 1024 * 1024 * 1024)));
    for (const char* d : {"f32", "f16", "bf16", "fp8-e4m3", "int8", "int4"}) {
        const QJsonObject o = j["by_dtype"].toObject()[d].toObject();
        for (const char* key : {"bytes_per_token", "bytes_per_sequence", "total_bytes", "sequences_that_fit"})
            QVERIFY2(o.contains(key), qPrintable(QStringLiteral("%1.%2").arg(d, key)));
    }
}

void TestCliCalc::text_table_lists_every_dtype() {
    const auto r = run_cli({"calc", "--preset", "llama-3-70b", "--tokens", "1000"});
    QCOMPARE(r.exit_code, 0);
    for (const char* d : {"f32", "f16", "bf16", "fp8-e4m3", "int8", "int4"})
        QVERIFY2(r.out.contains(d), r.out.constData());
    QVERIFY2(r.out.contains("320.0 KiB"), r.out.constData()); // f16 per token
}

void TestCliCalc::reads_geometry_from_a_gguf() {
    KVSCOPE_REQUIRE_MODEL(path, "stories260K-f32.gguf");
    const auto r = run_cli({"--log-level", "warn", "calc", "--model", path, "--tokens", "100", "--json"});
    QCOMPARE(r.exit_code, 0);
    // 5 layers x 4 KV heads x head_dim 8 x 2 x 2 bytes = 640 bytes; 100 tokens -> 7 blocks of 16.
    QCOMPARE(r.json()["bytes_per_token"].toInteger(), 640);
    QCOMPARE(r.json()["bytes_per_sequence"].toInteger(), 640 * 16 * 7);
}

void TestCliCalc::bad_input_is_a_clear_error() {
    auto r = run_cli({"calc", "--preset", "gpt-9"});
    QCOMPARE(r.exit_code, 1);
    QVERIFY2(r.err.contains("unknown model preset 'gpt-9'"), r.err.constData());
    r = run_cli({"calc", "--preset", "llama-2-7b", "--kv-dtype", "int3"});
    QCOMPARE(r.exit_code, 1);
    QVERIFY2(r.err.contains("unknown KV dtype"), r.err.constData());
    r = run_cli({"calc", "--preset", "llama-2-7b", "--tokens", "-5"});
    QCOMPARE(r.exit_code, 1);
    r = run_cli({"calc", "--preset", "llama-2-7b", "--bogus"});
    QCOMPARE(r.exit_code, 1);
    QVERIFY2(r.err.contains("unexpected argument '--bogus'"), r.err.constData());
    r = run_cli({"calc", "--model", "/nonexistent.gguf"});
    QCOMPARE(r.exit_code, 1);
    QVERIFY(r.err.contains("nonexistent.gguf"));
}

// calc --list: each new family with its head size, KV heads and windows.
void TestCliCalc::list_shows_heads_and_layer_kinds() {
    const auto r = run_cli({"calc", "--list"});
    QCOMPARE(r.exit_code, 0);
    auto line = [&](const char* preset) {
        for (const QByteArray& l : r.out.split('\n'))
            if (l.trimmed().startsWith(QByteArray(preset) + ' '))
                return l;
        return QByteArray();
    };
    QVERIFY2(line("qwen3-0.6b").contains("16 heads,  8 KV heads, head_dim 128"), r.out.constData());
    QVERIFY2(line("gemma3-1b").contains("window 512 on 22 of 26 layers (5 window : 1 global)"), r.out.constData());
    QVERIFY2(line("gemma3-4b").contains("window 1024 on 29 of 34 layers"), r.out.constData());
    QVERIFY2(line("gemma2-2b").contains("window 4096 on 13 of 26 layers (1 window : 1 global)"), r.out.constData());
    QVERIFY2(line("smollm3-3b").contains("no RoPE on 9 of 36 layers"), r.out.constData());
    QVERIFY2(line("phi-4-mini").contains("24 heads,  8 KV heads, head_dim 128"), r.out.constData());
    QVERIFY2(!line("llama-2-7b").contains("window"), r.out.constData());
}

QTEST_GUILESS_MAIN(TestCliCalc)
#include "test_cli_calc.moc"
