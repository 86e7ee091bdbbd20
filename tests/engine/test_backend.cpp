// Backend selection: the words, auto/cpu/cuda against a machine with or
// without a device, the engine config key, and a KV pool asked for on a GPU
// that is not there.
#include <QtTest>

#include <nlohmann/json.hpp>

#include "engine/core/backend.h"
#include "engine/core/device.h"
#include "engine/core/error.h"
#include "engine/engine_config.h"
#include "engine/kv/pool_memory.h"
#include "engine/runtime/forward_pass.h"

using namespace kvscope;

namespace {

const ComputeDevice kNoGpu{false, "CPU", 0, 0, "no CUDA device (no driver)"};
const ComputeDevice kGpu{true, "NVIDIA H200", 141ull << 30, 140ull << 30, {}};

ModelConfig small_model() {
    ModelConfig c;
    c.n_layers = 2;
    c.embedding_dim = 64;
    c.n_heads = 8;
    c.n_kv_heads = 4;
    c.head_dim = 8;
    c.rope_dims = 8;
    c.ffn_dim = 128;
    c.vocab_size = 32;
    return c;
}

} // namespace

class TestBackend : public QObject {
    Q_OBJECT
private slots:
    void words_round_trip();
    void auto_follows_the_device();
    void cuda_without_a_device_says_why();
    void engine_config_reads_and_writes_backend();
    void this_machine_without_a_device_runs_on_the_cpu();
    void host_pool_memory_copies();
};

void TestBackend::words_round_trip() {
    for (const Backend b : {Backend::Auto, Backend::Cpu, Backend::Cuda})
        QCOMPARE(parse_backend(to_string(b)), b);
    try {
        parse_backend("gpu");
        QFAIL("an unknown backend was accepted");
    } catch (const Error& e) {
        QVERIFY2(std::string(e.what()).find("auto, cpu or cuda") != std::string::npos, e.what());
    }
}

void TestBackend::auto_follows_the_device() {
    QCOMPARE(resolve_backend(Backend::Auto, kNoGpu), Backend::Cpu);
    QCOMPARE(resolve_backend(Backend::Auto, kGpu), Backend::Cuda);
    QCOMPARE(resolve_backend(Backend::Cpu, kGpu), Backend::Cpu);
    QCOMPARE(resolve_backend(Backend::Cuda, kGpu), Backend::Cuda);
    QCOMPARE(kv_memory(Backend::Cuda), MemoryPlace::Cuda);
    QCOMPARE(kv_memory(Backend::Cpu), MemoryPlace::Host);
}

void TestBackend::cuda_without_a_device_says_why() {
    try {
        resolve_backend(Backend::Cuda, kNoGpu);
        QFAIL("cuda without a device was accepted");
    } catch (const Error& e) {
        QCOMPARE(std::string(e.what()), std::string("backend cuda: no CUDA device (no driver)"));
    }
}

void TestBackend::engine_config_reads_and_writes_backend() {
    EngineConfig c;
    QCOMPARE(c.backend, Backend::Auto);
    c.backend = Backend::Cuda;
    QCOMPARE(engine_config_from_json(to_json(c)).backend, Backend::Cuda);
    QCOMPARE(to_json(c).at("backend").get<std::string>(), std::string("cuda"));
    QVERIFY_THROWS_EXCEPTION(Error, engine_config_from_json(nlohmann::ordered_json{{"backend", "tpu"}}));
}

void TestBackend::this_machine_without_a_device_runs_on_the_cpu() {
    if (detect_device().cuda)
        QSKIP("this machine has a CUDA device");
    const ModelConfig m = small_model();
    const KvLayout layout(m.kv_geometry(), KvDtype::F16, 16);
    QCOMPARE(choose_backend(Backend::Auto, m, layout), Backend::Cpu);
    QCOMPARE(choose_backend(Backend::Cpu, m, layout), Backend::Cpu);
    QVERIFY_THROWS_EXCEPTION(Error, choose_backend(Backend::Cuda, m, layout));
    // A pool asked for in VRAM: an error a person can read, never a crash.
    QVERIFY_THROWS_EXCEPTION(Error, PoolMemory(1 << 20, MemoryPlace::Cuda));
}

void TestBackend::host_pool_memory_copies() {
    PoolMemory a(64, MemoryPlace::Host), b(64, MemoryPlace::Host);
    QCOMPARE(a.place(), MemoryPlace::Host);
    QCOMPARE(a.data()[5], std::byte{0}); // zeroed
    for (int i = 0; i < 64; ++i)
        a.data()[i] = static_cast<std::byte>(i);
    PoolMemory::copy(a, 16, b, 32, 8);
    for (int i = 0; i < 8; ++i)
        QCOMPARE(b.data()[32 + i], static_cast<std::byte>(16 + i));
    QCOMPARE(b.data()[31], std::byte{0});
    QCOMPARE(b.data()[40], std::byte{0});
}

QTEST_APPLESS_MAIN(TestBackend)
#include "test_backend.moc"
