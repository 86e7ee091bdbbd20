// The CUDA backend end to end (ctest label gpu; skipped without a device):
// greedy generation of stories260K reproduces llama2.c's run.c, and the
// engine serves a batch on the GPU with every block returned and the pool
// reported in VRAM.
#include <QtTest>

#include "engine/core/device.h"
#include "../engine/engine_test_support.h"
#include "jsonl.h"
#include "support/test_models.h"

using namespace kvscope;
using namespace kvscope::test;

class TestCudaGeneration : public QObject {
    Q_OBJECT
private slots:
    void initTestCase();
    void reproduces_run_c_greedy_data();
    void reproduces_run_c_greedy();
    void engine_serves_a_batch_in_vram();
};

void TestCudaGeneration::initTestCase() {
    const ComputeDevice device = detect_device();
    if (!device.cuda)
        QSKIP(qPrintable(QStringLiteral("no CUDA device: %1").arg(QString::fromStdString(device.note))));
}

void TestCudaGeneration::reproduces_run_c_greedy_data() {
    QTest::addColumn<int>("kv_dtype");
    QTest::newRow("f32 KV") << int(KvDtype::F32);
    QTest::newRow("f16 KV") << int(KvDtype::F16);
}

void TestCudaGeneration::reproduces_run_c_greedy() {
    QFETCH(int, kv_dtype);
    KVSCOPE_REQUIRE_MODEL(path, "stories260K.reference.jsonl");
    const auto model = std::make_shared<const Model>(test_model_path("stories260K-f32.gguf").toStdString());
    const auto rows = read_jsonl(path);
    QVERIFY(rows.size() >= 6);
    GenerateSetup setup;
    setup.backend = Backend::Cuda;
    setup.kv_dtype = static_cast<KvDtype>(kv_dtype);
    const std::optional<QString> mismatch = first_reference_mismatch(model, rows, setup);
    QVERIFY2(!mismatch, qPrintable(QStringLiteral("prompt '%1' generates other tokens").arg(mismatch.value_or(QString()))));
}

// Several prompts at once through continuous batching (prefill and decode
// in the same steps, paged blocks), against the same requests on the CPU.
void TestCudaGeneration::engine_serves_a_batch_in_vram() {
    KVSCOPE_REQUIRE_MODEL(path, "stories260K-f32.gguf");
    const auto model = std::make_shared<const Model>(path.toStdString());
    const std::vector<std::string> prompts{"Once upon a time", "The cat", "Lily and Tom went to the park",
                                           "One day"};
    auto run = [&](Backend backend, Outputs& out) {
        EngineConfig c = small_config(64);
        c.backend = backend;
        Engine engine(c, model);
        QCOMPARE(engine.backend(), backend);
        collect_into(engine, out);
        RequestParams p;
        p.max_new_tokens = 40;
        for (const std::string& prompt : prompts)
            engine.add_request(prompt, p).id();
        drain(engine);
        engine.kv().check_invariants();
        QCOMPARE(engine.kv().pool().num_free(), engine.kv().pool().num_blocks()); // every block returned
        const auto snap = engine.snapshot();
        QCOMPARE(snap->device.backend, backend);
        if (backend == Backend::Cuda) {
            QCOMPARE(snap->device.kv_memory, MemoryPlace::Cuda);
            QVERIFY(snap->device.name && !snap->device.name->empty());
            QVERIFY(snap->device.memory_total.value_or(0) > 0);
            QVERIFY(snap->device.memory_free.value_or(0) <= *snap->device.memory_total);
        }
    };
    Outputs cpu, gpu;
    run(Backend::Cpu, cpu);
    run(Backend::Cuda, gpu);
    QCOMPARE(gpu.size(), prompts.size());
    for (const auto& [key, out] : cpu) {
        QVERIFY(out.error.empty());
        QCOMPARE(gpu[key].tokens, out.tokens);
    }
}

QTEST_APPLESS_MAIN(TestCudaGeneration)
#include "test_cuda_generation.moc"
