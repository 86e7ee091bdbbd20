// kvscope-cli calc, run as a process: JSON keys and values, and errors.
#include <QtTest>

#include <QJsonArray>
#include <algorithm>

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
    void gemma3_27b_window_groups_by_hand_and_against_vllm();
    void swa_full_and_chunk_change_the_window_groups_only();
    void mla_counts_one_latent_per_token_and_layer();
    void mixtures_of_experts_with_their_windows();
    void list_shows_calculator_only_models_and_the_three_savings();
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
    // --log-level is global: after the command too (issue 33), and the info
    // lines it silences stay off stderr there as well.
    const auto after = run_cli({"calc", "--model", path, "--log-level", "warn", "--tokens", "100", "--json"});
    QCOMPARE(after.exit_code, 0);
    QCOMPARE(after.json()["bytes_per_token"].toInteger(), 640);
    QVERIFY2(!after.err.contains("[info]"), after.err.constData());
    const auto chatty = run_cli({"calc", "--model", path, "--log-level", "info", "--tokens", "100", "--json"});
    QVERIFY2(chatty.err.contains("[info]"), chatty.err.constData());
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
    r = run_cli({"calc", "--preset", "llama-2-7b", "--log-level"});
    QCOMPARE(r.exit_code, 1);
    QVERIFY2(r.err.contains("--log-level needs a level"), r.err.constData());
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

// Issue 30's acceptance: gemma3-27b at 131,072 tokens, per kind of layer
// and in total, written out by hand; and what vLLM's hybrid manager
// reserves for the same request by its own formula.
void TestCliCalc::gemma3_27b_window_groups_by_hand_and_against_vllm() {
    const auto r = run_cli({"calc", "--preset", "gemma3-27b", "--tokens", "131072", "--json"});
    QCOMPARE(r.exit_code, 0);
    const QJsonObject j = r.json();
    // google/gemma-3-27b-it config.json: 62 layers, 16 KV heads, head_dim
    // 128, sliding_window 1024, pattern 6 (layers 5, 11, ..., 59 global):
    // 10 full-attention layers, 52 window layers.
    constexpr qint64 kLayerToken = 2 * 16 * 128 * 2; // K and V, 16 heads x 128 values, f16: 8,192 B
    // kv_groups.h: 5 layers a block (the largest size up to 10 whose
    // padding is <= 5% of 62): full 10 layers -> 2 groups; window 52 ->
    // 11 groups, 55 layer slots, 3 of them padding.
    constexpr qint64 kBlock = 5 * 16 * kLayerToken; // one group's block of 16 tokens: 655,360 B
    constexpr qint64 kFullBlocks = 2 * (131072 / 16); // every token: 2 x 8,192
    // Window group: min(ceil(131072 / 16), ceil((1024 - 1 + 512) / 16) + 1) = min(8192, 96 + 1) = 97.
    constexpr qint64 kWindowBlocks = 11 * ((1024 - 1 + 512 + 15) / 16 + 1);
    QCOMPARE(kWindowBlocks, 1067);
    QCOMPARE(j["layers_per_block"].toInteger(), 5);
    QCOMPARE(j["groups"].toInteger(), 13);
    QCOMPARE(j["bytes_per_block"].toInteger(), kBlock);
    const QJsonArray kinds = j["kinds"].toArray();
    QCOMPARE(kinds.size(), 2);
    QCOMPARE(kinds[0]["kind"].toString(), QStringLiteral("full attention, 10 layers"));
    QCOMPARE(kinds[0]["bytes_per_token"].toInteger(), 2 * kBlock / 16); // 81,920
    QCOMPARE(kinds[0]["blocks_per_sequence"].toInteger(), kFullBlocks);
    QCOMPARE(kinds[0]["bytes_per_sequence"].toInteger(), kFullBlocks * kBlock); // 10,737,418,240
    QCOMPARE(kinds[1]["kind"].toString(), QStringLiteral("sliding window 1024, 52 layers"));
    QCOMPARE(kinds[1]["layer_slots"].toInteger(), 55);
    QCOMPARE(kinds[1]["bytes_per_token"].toInteger(), 11 * kBlock / 16); // 450,560
    QCOMPARE(kinds[1]["blocks_per_sequence"].toInteger(), kWindowBlocks);
    QCOMPARE(kinds[1]["bytes_per_sequence"].toInteger(), kWindowBlocks * kBlock); // 699,269,120
    const qint64 total = (kFullBlocks + kWindowBlocks) * kBlock;
    QCOMPARE(total, Q_INT64_C(11436687360));
    QCOMPARE(j["bytes_per_sequence"].toInteger(), total);
    QCOMPARE(j["total_bytes"].toInteger(), total);
    QCOMPARE(j["bytes_per_token"].toInteger(), 13 * kBlock / 16); // every group keeping the token: 532,480
    QCOMPARE(j["whole_bytes_per_sequence"].toInteger(), 13 * (131072 / 16) * kBlock); // --swa-full: 69,793,218,560

    // vLLM (vllm/v1/kv_cache_interface.py, commit 001cabc1be16): per layer,
    // page_size_bytes = 2 * block_size * num_kv_heads * head_size * dtype
    // size = 2 * 16 * 16 * 128 * 2 = 131,072;
    // FullAttentionSpec.max_memory_usage_bytes =
    //   cdiv(max_model_len, block_size) * page_size_bytes;
    // SlidingWindowSpec.max_memory_usage_bytes: num_tokens =
    //   min(sliding_window - 1 + max_num_batched_tokens, max_model_len);
    //   (cdiv(num_tokens, block_size) + 1) * page_size_bytes.
    // With max_model_len 131072 and max_num_batched_tokens 512:
    constexpr qint64 kPage = 2 * 16 * 16 * 128 * 2;
    constexpr qint64 kVllmFull = (131072 / 16) * kPage;                           // 1,073,741,824 a layer
    constexpr qint64 kVllmWindow = ((std::min(1024 - 1 + 512, 131072) + 15) / 16 + 1) * kPage; // 97 pages: 12,713,984
    const qint64 vllm = 10 * kVllmFull + 52 * kVllmWindow;
    QCOMPARE(vllm, Q_INT64_C(11398545408));
    // The full layers agree to the byte. The window layers differ by
    // kvscope's 3 padding slots (55 slots for 52 layers, 97 blocks each):
    // 38,141,952 B, 0.33% of the total. vLLM's formula sums real layers;
    // its own grouping (kv_cache_utils.py, _get_kv_cache_groups_uniform_page_size:
    // groups of the smallest kind's count, 10) makes 6 window groups of 8-9
    // layers padded to 10, so its pool holds 60 window slots for 52 layers.
    QCOMPARE(kinds[0]["bytes_per_sequence"].toInteger(), 10 * kVllmFull);
    QCOMPARE(total - vllm, 3 * 97 * kPage);
}

// --swa-full keeps the window groups whole; --chunk moves their cap; the
// full-attention group does not move.
void TestCliCalc::swa_full_and_chunk_change_the_window_groups_only() {
    const auto whole = run_cli({"calc", "--preset", "gemma3-1b", "--tokens", "8192", "--swa-full", "--json"});
    QCOMPARE(whole.exit_code, 0);
    // gemma3-1b: 4 full, 22 window layers, 2 layers a block, 13 groups of
    // 2 x 16 x (2 x 1 x 256 x 2) = 32,768 B blocks; 8192 tokens = 512 blocks each.
    QCOMPARE(whole.json()["bytes_per_sequence"].toInteger(), 13 * 512 * 32768);
    QCOMPARE(whole.json()["swa_full"].toBool(), true);
    const auto chunk = run_cli({"calc", "--preset", "gemma3-1b", "--tokens", "8192", "--chunk", "2048", "--json"});
    QCOMPARE(chunk.exit_code, 0);
    const QJsonArray kinds = chunk.json()["kinds"].toArray();
    QCOMPARE(kinds[0]["blocks_per_sequence"].toInteger(), 2 * 512);
    // 11 window groups x (ceil((512 - 1 + 2048) / 16) + 1 = 161) blocks.
    QCOMPARE(kinds[1]["blocks_per_sequence"].toInteger(), 11 * 161);
    QCOMPARE(chunk.json()["whole_bytes_per_sequence"].toInteger(), 13 * 512 * 32768);
    const auto zero = run_cli({"calc", "--preset", "gemma3-1b", "--chunk", "0"});
    QCOMPARE(zero.exit_code, 1);
}

// DeepSeek-V3 / Kimi-K2: 61 layers x (512 + 64) values per token, f16.
void TestCliCalc::mla_counts_one_latent_per_token_and_layer() {
    const auto r = run_cli({"calc", "--preset", "deepseek-v3", "--tokens", "1000", "--json"});
    QCOMPARE(r.exit_code, 0);
    const QJsonObject j = r.json();
    QCOMPARE(j["bytes_per_token"].toInteger(), 61 * (512 + 64) * 2); // 70,272 B
    QCOMPARE(j["bytes_per_sequence"].toInteger(), 61 * (512 + 64) * 2 * 16 * 63); // ceil(1000 / 16) = 63 blocks
    QCOMPARE(j["model"]["latent"]["latent_dim"].toInteger(), 512);
    QCOMPARE(j["by_dtype"].toObject().keys(), (QStringList{"bf16", "f16", "f32"}));
    QCOMPARE(j["kinds"].toArray().at(0).toObject()["kind"].toString(), QStringLiteral("latent 512 + 64, 61 layers"));
    const auto kimi = run_cli({"calc", "--preset", "kimi-k2", "--tokens", "1000", "--json"});
    QCOMPARE(kimi.json()["bytes_per_sequence"].toInteger(), j["bytes_per_sequence"].toInteger());
    const auto int8 = run_cli({"calc", "--preset", "deepseek-v3", "--kv-dtype", "int8"});
    QCOMPARE(int8.exit_code, 1);
    QVERIFY2(int8.err.contains("latent KV (MLA) is counted in f32, f16 and bf16 only"), int8.err.constData());
    QVERIFY2(int8.out.isEmpty(), int8.out.constData());
}

// The mixture-of-experts presets: KV as any attention's (experts hold no
// KV), gpt-oss-20b's 12 window layers of 128 beside 12 full ones, every
// Qwen3-30B-A3B layer full; weights counted with every expert.
void TestCliCalc::mixtures_of_experts_with_their_windows() {
    const auto gpt_oss = run_cli({"calc", "--preset", "gpt-oss-20b", "--tokens", "131072", "--json"});
    QCOMPARE(gpt_oss.exit_code, 0);
    const QJsonObject g = gpt_oss.json();
    constexpr qint64 kGptOssLayerToken = 2 * 8 * 64 * 2; // K and V, 8 heads x 64 values, f16: 2,048 B
    QCOMPARE(g["bytes_per_token"].toInteger(), 24 * kGptOssLayerToken); // 49,152
    QCOMPARE(g["model"]["parameters"].toInteger(), Q_INT64_C(20914757184));
    const QJsonArray kinds = g["kinds"].toArray();
    QCOMPARE(kinds.size(), 2);
    QCOMPARE(kinds[0]["kind"].toString(), QStringLiteral("full attention, 12 layers"));
    QCOMPARE(kinds[0]["bytes_per_token"].toInteger(), 12 * kGptOssLayerToken);
    QCOMPARE(kinds[0]["blocks_per_sequence"].toInteger(), 131072 / 16);
    QCOMPARE(kinds[1]["kind"].toString(), QStringLiteral("sliding window 128, 12 layers"));
    QCOMPARE(kinds[1]["bytes_per_token"].toInteger(), 12 * kGptOssLayerToken);
    // min(8192, ceil((128 - 1 + 512) / 16) + 1) blocks: the window and a step's chunk.
    QCOMPARE(kinds[1]["blocks_per_sequence"].toInteger(), (128 - 1 + 512 + 15) / 16 + 1);

    const auto qwen = run_cli({"calc", "--preset", "qwen3-30b-a3b", "--tokens", "40960", "--json"});
    QCOMPARE(qwen.exit_code, 0);
    const QJsonObject q = qwen.json();
    QCOMPARE(q["bytes_per_token"].toInteger(), 48 * 2 * 4 * 128 * 2); // 98,304
    QCOMPARE(q["kinds"].toArray().size(), 1);
    QCOMPARE(q["bytes_per_sequence"].toInteger(), Q_INT64_C(98304) * 40960);
    QCOMPARE(q["model"]["parameters"].toInteger(), Q_INT64_C(30532122624));
}

void TestCliCalc::list_shows_calculator_only_models_and_the_three_savings() {
    const auto r = run_cli({"calc", "--list"});
    QCOMPARE(r.exit_code, 0);
    const QByteArray calcOnly = r.out.mid(r.out.indexOf(QByteArray("calculator-only presets")));
    for (const char* name : {"gemma3-27b", "gpt-oss-120b", "mistral-7b-v0.1", "deepseek-v3", "kimi-k2"})
        QVERIFY2(calcOnly.contains(QByteArray("  ") + name + ' '), name);
    QVERIFY2(calcOnly.contains("kvscope cannot load or make MLA models"), r.out.constData());
    QVERIFY2(calcOnly.contains("window 128 on 18 of 36 layers (1 window : 1 global)"), r.out.constData());
    QVERIFY2(calcOnly.contains("window 4096 on every layer"), r.out.constData());
    QVERIFY2(calcOnly.contains("latent 512 + 64 for 128 heads"), r.out.constData());
    QVERIFY2(calcOnly.contains("8 KV heads for 32; window 4096 on 32 of 32 layers"), r.out.constData());
    // The preset list still starts with the loadable models only; gpt-oss-20b
    // is one of them, with its windows.
    const QByteArray loadable = r.out.left(r.out.indexOf(QByteArray("calculator-only presets")));
    QVERIFY(r.out.indexOf(QByteArray("gpt-oss-120b")) > r.out.indexOf(QByteArray("calculator-only presets")));
    QVERIFY2(loadable.contains("gpt-oss-20b      gpt-oss  24 layers") &&
                 loadable.contains("20.91B parameters; window 128 on 12 of 24 layers (1 window : 1 global)"),
             loadable.constData());
    QVERIFY2(loadable.contains("qwen3-30b-a3b    qwen3moe 48 layers, 32 heads,  4 KV heads, head_dim 128"),
             loadable.constData());
}

QTEST_GUILESS_MAIN(TestCliCalc)
#include "test_cli_calc.moc"
