// A batch mixes sequences of different lengths, prefill chunks and
// decodes; each sequence's logits must not depend on its batch mates or on
// how its prompt was chunked.
#include <QtTest>

#include <cmath>

#include "engine/runtime/model.h"
#include "engine/runtime/runner.h"
#include "support/test_models.h"

using namespace kvscope;

namespace {

KvCacheManager make_cache(const Model& m) {
    const ModelConfig& c = m.config();
    return KvCacheManager({KvLayout(c.kv_geometry(), KvDtype::F32, 4), 64,
                           AllocationMode::Paged, false, 0, 0.0});
}

double max_diff(std::span<const float> a, std::span<const float> b) {
    double d = 0;
    for (std::size_t i = 0; i < a.size(); ++i)
        d = std::max(d, double(std::abs(a[i] - b[i])));
    return a.size() == b.size() ? d : 1e9;
}

const std::vector<TokenId> kA{1, 403, 407, 261, 378};
const std::vector<TokenId> kB{1, 320, 411, 299, 268, 402, 290, 310, 375};

} // namespace

class TestRunnerBatch : public QObject {
    Q_OBJECT
private slots:
    void batch_equals_alone_and_chunking_does_not_matter();
    void rejects_unallocated_positions();
};

void TestRunnerBatch::batch_equals_alone_and_chunking_does_not_matter() {
    KVSCOPE_REQUIRE_MODEL(path, "stories260K-f32.gguf");
    const Model model(path.toStdString());
    const std::size_t vocab = model.config().vocab_size;

    // Alone: A prefilled, then one decode step; B prefilled.
    KvCacheManager alone = make_cache(model);
    Runner r1(model.config(), model.weights(), alone.layout());
    alone.allocate(1, kA, 8);
    alone.allocate(2, kB, 8);
    const SeqChunk a0{1, kA, 0, true}, b0{2, kB, 0, true};
    const auto a_prefill = r1.forward({&a0, 1}, alone);
    const auto b_prefill = r1.forward({&b0, 1}, alone);
    const TokenId next = 300;
    alone.append(1, next);
    const SeqChunk a1{1, std::span<const TokenId>(&next, 1), 5, true};
    const auto a_decode = r1.forward({&a1, 1}, alone);

    // Together: B's prompt in two chunks, the second sharing a batch with A's decode.
    KvCacheManager together = make_cache(model);
    Runner r2(model.config(), model.weights(), together.layout());
    together.allocate(1, kA, 8);
    together.allocate(2, kB, 8);
    const std::vector<SeqChunk> step1{{1, kA, 0, true}, {2, std::span(kB).first(4), 0, false}};
    const auto l1 = r2.forward(step1, together);
    QCOMPARE(l1.size(), vocab); // only A asked for logits
    QVERIFY(max_diff(std::span(l1).first(vocab), a_prefill) < 1e-5);
    together.append(1, next);
    const std::vector<SeqChunk> step2{{1, std::span<const TokenId>(&next, 1), 5, true},
                                      {2, std::span(kB).subspan(4), 4, true}};
    const auto l2 = r2.forward(step2, together);
    QCOMPARE(l2.size(), 2 * vocab);
    QVERIFY(max_diff(std::span(l2).first(vocab), a_decode) < 1e-5);
    QVERIFY(max_diff(std::span(l2).subspan(vocab), b_prefill) < 1e-5);
}

void TestRunnerBatch::rejects_unallocated_positions() {
    KVSCOPE_REQUIRE_MODEL(path, "stories260K-f32.gguf");
    const Model model(path.toStdString());
    KvCacheManager kv = make_cache(model);
    Runner r(model.config(), model.weights(), kv.layout());
    kv.allocate(1, kA, 8);
    const std::vector<TokenId> more{5, 6};
    const SeqChunk past{1, more, 5, true}; // positions 5, 6 were never appended
    QVERIFY_THROWS_EXCEPTION(Error, r.forward({&past, 1}, kv));
    const std::vector<TokenId> bad{1, 99999};
    kv.allocate(2, std::vector<TokenId>{1, 2}, 0);
    const SeqChunk oov{2, bad, 0, true};
    QVERIFY_THROWS_EXCEPTION(Error, r.forward({&oov, 1}, kv));
}

QTEST_APPLESS_MAIN(TestRunnerBatch)
#include "test_runner_batch.moc"
