// EngineConfig: JSON round trip, defaults, and clear errors.
#include <QtTest>

#include <QTemporaryDir>

#include <nlohmann/json.hpp>

#include "engine/core/error.h"
#include "engine/engine_config.h"

using namespace kvscope;

class TestEngineConfig : public QObject {
    Q_OBJECT
private slots:
    void round_trips_through_a_file();
    void missing_keys_keep_defaults();
    void bad_values_name_the_key();
    void suggested_budget_fits_the_model();
    void pool_blocks_come_from_the_budget();
};

void TestEngineConfig::round_trips_through_a_file() {
    EngineConfig c;
    c.model = "/models/x.gguf";
    c.threads = 3;
    c.kv_dtype = KvDtype::F32;
    c.block_size = 32;
    c.num_blocks = 123;
    c.kv_budget_mib = 64.5;
    c.allocation = AllocationMode::Contiguous;
    c.preemption = PreemptionMode::Swap;
    c.prefix_caching = false;
    c.max_num_seqs = 7;
    c.max_num_batched_tokens = 99;
    c.swap_blocks = 11;
    c.watermark = 0.02;
    c.scheduling_policy = SchedulingPolicy::Priority;
    QTemporaryDir dir;
    const std::string path = dir.filePath("engine.json").toStdString();
    save_engine_config(c, path);
    const EngineConfig d = load_engine_config(path);
    QCOMPARE(to_json(d).dump(), to_json(c).dump());
    QCOMPARE(d.allocation, AllocationMode::Contiguous);
    QCOMPARE(d.kv_budget_mib, 64.5);
    QCOMPARE(d.scheduling_policy, SchedulingPolicy::Priority);
}

void TestEngineConfig::missing_keys_keep_defaults() {
    const EngineConfig c = engine_config_from_json(nlohmann::ordered_json{{"block_size", 8}});
    QCOMPARE(c.block_size, 8u);
    QCOMPARE(c.kv_dtype, EngineConfig{}.kv_dtype);
    QCOMPARE(c.max_num_seqs, EngineConfig{}.max_num_seqs);
}

void TestEngineConfig::bad_values_name_the_key() {
    auto message = [](const nlohmann::ordered_json& j) {
        try {
            engine_config_from_json(j);
        } catch (const Error& e) {
            return QString(e.what());
        }
        return QString();
    };
    QVERIFY(message({{"blok_size", 8}}).contains("unknown key 'blok_size'"));
    QVERIFY(message({{"block_size", "big"}}).contains("'block_size'"));
    QVERIFY(message({{"kv_dtype", "int3"}}).contains("unknown KV dtype"));
    QVERIFY(message({{"allocation", "buddy"}}).contains("unknown allocation mode"));
    QVERIFY(message({{"preemption", "kill"}}).contains("unknown preemption mode"));
    QVERIFY_THROWS_EXCEPTION(Error, load_engine_config("/nonexistent/engine.json"));
}

// stories260K's, a Llama-2-7B's and a TinyLlama-1.1B's KV shapes, f16.
void TestEngineConfig::suggested_budget_fits_the_model() {
    EngineConfig c;
    c.kv_budget_mib = 0;
    // Small: every sequence (64) at the full context (512 tokens = 32 blocks
    // of 10 KiB): 20 MiB, not the 256 MiB cap.
    const KvLayout stories({5, 4, 8}, KvDtype::F16, 16);
    QCOMPARE(suggested_kv_budget_mib(c, stories, 512), 20.0);
    QCOMPARE(kv_pool_blocks(c, stories, 512), 64u * 32u);
    // Large: one full context (4096 tokens of 512 KiB) is more than the cap,
    // and a chat must be able to fill its context.
    const KvLayout llama7b({32, 32, 128}, KvDtype::F16, 16);
    QCOMPARE(suggested_kv_budget_mib(c, llama7b, 4096), 2048.0);
    QCOMPARE(kv_pool_blocks(c, llama7b, 4096), 4096u / 16u);
    // Between: capped at the documented 256 MiB default.
    const KvLayout tinyllama({22, 4, 64}, KvDtype::F16, 16);
    QCOMPARE(suggested_kv_budget_mib(c, tinyllama, 2048), kDefaultKvBudgetMib);
    QCOMPARE(kv_pool_blocks(c, tinyllama, 2048),
             static_cast<std::uint32_t>(kDefaultKvBudgetMib * 1024 * 1024 / static_cast<double>(tinyllama.bytes_per_block())));
    // KIVI: the tails of max_num_seqs sequences come on top, and the blocks
    // still hold every sequence's full context.
    const KvLayout kivi({5, 4, 8}, KvDtype::Int4Kivi, 16);
    QVERIFY(kv_pool_blocks(c, kivi, 512) >= 64u * 32u);
}

void TestEngineConfig::pool_blocks_come_from_the_budget() {
    const KvLayout stories({5, 4, 8}, KvDtype::F16, 16); // 10 KiB blocks
    EngineConfig c;
    c.kv_budget_mib = 1;
    QCOMPARE(kv_pool_blocks(c, stories, 512), 102u);
    c.num_blocks = 7; // overrides the budget
    QCOMPARE(kv_pool_blocks(c, stories, 512), 7u);
    c.num_blocks = 0;
    c.kv_budget_mib = 0.001;
    QVERIFY_THROWS_EXCEPTION(Error, kv_pool_blocks(c, stories, 512));
}

QTEST_APPLESS_MAIN(TestEngineConfig)
#include "test_engine_config.moc"
