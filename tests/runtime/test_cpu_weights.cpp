// Model::cpu_weights: every matrix the CPU has tile kernels for is packed
// once per Model, whichever threads ask at once (two engines side by side
// share one copy), and the forward pass over the packed copy gives the
// logits of the file's layout up to float summation order.
#include <QtTest>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <thread>
#include <vector>

#include "engine/core/error.h"
#include "engine/runtime/model.h"
#include "engine/runtime/runner.h"
#include "engine/runtime/shared_models.h"
#include "kernels/cpu/os_memory.h"
#include "kernels/cpu/packed_kernel.h"
#include "support/process_memory.h"
#include "support/test_models.h"

using namespace kvscope;

namespace {

std::vector<const WeightMatrix*> matrices(const ModelWeights& w) {
    std::vector<const WeightMatrix*> all{&w.output};
    for (const LayerWeights& l : w.layers)
        for (const WeightMatrix* m : {&l.q, &l.k, &l.v, &l.o, &l.gate, &l.up, &l.down})
            all.push_back(m);
    return all;
}

std::vector<float> prompt_logits(const Model& model, const ModelWeights& weights) {
    const ModelConfig& c = model.config();
    KvCacheManager kv({KvLayout(c.kv_geometry(), KvDtype::F32, 4), 64, AllocationMode::Paged,
                       false, 0, 0.0});
    const std::vector<TokenId> prompt{1, 403, 407, 261, 378, 320, 411};
    kv.allocate(1, prompt, 8);
    Runner runner(c, weights, kv.layout());
    const SeqChunk chunk{1, prompt, 0, true};
    return runner.forward({&chunk, 1}, kv);
}

// Pages lying wholly inside [p, p + bytes).
std::size_t whole_page_bytes(const void* p, std::size_t bytes) {
    const std::uintptr_t page = kernels::cpu::page_size();
    const auto begin = (reinterpret_cast<std::uintptr_t>(p) + page - 1) / page * page;
    const auto end = (reinterpret_cast<std::uintptr_t>(p) + bytes) / page * page;
    return end > begin ? end - begin : 0;
}

} // namespace

class TestCpuWeights : public QObject {
    Q_OBJECT
private slots:
    void packed_once_for_every_caller();
    void packed_logits_match_the_file_layout();
    void packing_releases_the_files_pages();
    void shared_models_remember_what_is_held();
    void a_rewritten_file_is_another_model();
};

void TestCpuWeights::packed_once_for_every_caller() {
    KVSCOPE_REQUIRE_MODEL(path, "stories260K-q8_0.gguf");
    const Model model(path.toStdString());
    std::vector<const ModelWeights*> seen(4);
    std::vector<std::thread> callers;
    for (std::size_t t = 0; t < seen.size(); ++t)
        callers.emplace_back([&, t] { seen[t] = &model.cpu_weights(); });
    for (std::thread& c : callers)
        c.join();
    for (const ModelWeights* w : seen)
        QCOMPARE(w, seen[0]);
    const std::vector<const WeightMatrix*> packed = matrices(*seen[0]), file = matrices(model.weights());
    for (std::size_t i = 0; i < packed.size(); ++i) {
        QVERIFY(file[i]->packed == nullptr); // the file's view stays as it was
        const bool has_kernel = kernels::cpu::detail::best_packed_gemm(packed[i]->type, kernels::cpu::best_simd_path()).fn != nullptr;
        QCOMPARE(packed[i]->packed != nullptr, has_kernel);
        if (packed[i]->packed != nullptr) {
            QCOMPARE(packed[i]->packed->rows(), packed[i]->rows);
            QCOMPARE(packed[i]->packed->cols(), packed[i]->cols);
            QCOMPARE(packed[i]->packed->type(), packed[i]->type);
        }
    }
}

void TestCpuWeights::packed_logits_match_the_file_layout() {
    // The same quantized integers either way; only the float sums run in
    // another order. Relative to the logits' spread, a difference of 1e-4
    // would already be a bug in a scale or an offset.
    for (const char* name : {"stories260K-q8_0.gguf", "stories260K-q4_0.gguf", "stories260K-q4_k_m.gguf",
                             "stories260K-q6_k.gguf", "stories260K-f16.gguf"}) {
        KVSCOPE_REQUIRE_MODEL(path, "stories260K-f32.gguf");
        const Model model(test::test_model_path(QString::fromLatin1(name)).toStdString());
        const std::vector<float> file = prompt_logits(model, model.weights());
        const std::vector<float> packed = prompt_logits(model, model.cpu_weights());
        QCOMPARE(packed.size(), file.size());
        double spread = 0, diff = 0;
        for (std::size_t i = 0; i < file.size(); ++i) {
            spread = std::max(spread, std::fabs(static_cast<double>(file[i])));
            diff = std::max(diff, std::fabs(static_cast<double>(packed[i]) - file[i]));
        }
        QVERIFY2(diff <= 1e-4 * spread, qPrintable(QStringLiteral("%1: max difference %2 of %3").arg(name).arg(diff).arg(spread)));
    }
}

void TestCpuWeights::packing_releases_the_files_pages() {
    // The weights should count once in resident memory: as tiles, not also
    // as the file's pages they were packed from.
    KVSCOPE_REQUIRE_MODEL(path, "stories260K-f16.gguf");
    const Model model(path.toStdString());
    volatile unsigned char sink = 0;
    for (const WeightMatrix* m : matrices(model.weights())) // make every page resident
        for (std::size_t i = 0; i < m->rows * m->row_bytes; i += 64)
            sink = sink ^ static_cast<const unsigned char*>(m->data)[i];
    const void* mapped = model.weights().output.data;
    const std::optional<std::size_t> before = test::mapping_resident_bytes(mapped);
    if (!before)
        QSKIP("no per-mapping resident size on this system (Linux's smaps)");
    std::size_t packed_pages = 0;
    for (const WeightMatrix* m : matrices(model.cpu_weights()))
        if (m->packed != nullptr)
            packed_pages += whole_page_bytes(m->data, m->rows * m->row_bytes);
    if (packed_pages == 0)
        QSKIP("no tile kernels on this CPU: nothing is packed");
    const std::size_t after = test::mapping_resident_bytes(mapped).value_or(*before);
    QVERIFY2(after + packed_pages <= *before,
             qPrintable(QStringLiteral("resident %1 -> %2 bytes, packed matrices' pages %3")
                            .arg(*before).arg(after).arg(packed_pages)));
    const std::vector<float> logits = prompt_logits(model, model.weights()); // the file's bytes come back
    QVERIFY(!logits.empty() && std::isfinite(logits[0]));
}

void TestCpuWeights::shared_models_remember_what_is_held() {
    KVSCOPE_REQUIRE_MODEL(path, "stories260K-q8_0.gguf");
    SharedModels models;
    int loads = 0;
    const auto load = [&] {
        ++loads;
        return std::make_shared<const Model>(path.toStdString());
    };
    const std::string key = SharedModels::file_key(path.toStdString());
    auto first = models.open(key, load);
    QCOMPARE(models.open(key, load).get(), first.get()); // held: shared
    QCOMPARE(loads, 1);
    first.reset();
    QVERIFY(models.open(key, load) != nullptr); // nobody held it: loaded again
    QCOMPARE(loads, 2);
    QVERIFY_THROWS_EXCEPTION(std::runtime_error, models.open("other", []() -> std::shared_ptr<const Model> {
        throw std::runtime_error("unreadable");
    }));
    QVERIFY(models.open("other", load) != nullptr); // a failed load is not remembered
    QVERIFY_THROWS_EXCEPTION(Error, SharedModels::file_key("/nonexistent/model.gguf"));
}

void TestCpuWeights::a_rewritten_file_is_another_model() {
    // The same path rewritten in place (a new make-model run) must not
    // reuse the old mapping's model.
    KVSCOPE_REQUIRE_MODEL(path, "stories260K-q8_0.gguf");
    namespace fs = std::filesystem;
    const fs::path copy = fs::temp_directory_path() / ("kvscope-test-" + std::to_string(::getpid()) + ".gguf");
    fs::copy_file(path.toStdString(), copy, fs::copy_options::overwrite_existing);
    const std::string before = SharedModels::file_key(copy.string());
    fs::last_write_time(copy, fs::last_write_time(copy) + std::chrono::seconds(5));
    QVERIFY(SharedModels::file_key(copy.string()) != before);
    fs::remove(copy);
}

QTEST_APPLESS_MAIN(TestCpuWeights)
#include "test_cpu_weights.moc"
