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

QTEST_APPLESS_MAIN(TestEngineConfig)
#include "test_engine_config.moc"
