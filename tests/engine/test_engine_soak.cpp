// 1,000 requests with random lengths, random aborts and some that can never
// fit, through a pool small enough to preempt constantly, in both
// preemption modes: every request ends with a finish reason, nothing
// escapes step(), and afterwards every block is free. On a dense model
// (stories260K) and on a hybrid one (window and global layers: its window
// groups free blocks as they leave the window).
#include <QtTest>

#include <QTemporaryDir>

#include <random>
#include <set>

#include "engine_test_support.h"
#include "support/tiny_hybrid_model.h"

using namespace kvscope;
using namespace kvscope::test;

class TestEngineSoak : public QObject {
    Q_OBJECT
private slots:
    void thousand_requests_data();
    void thousand_requests();
};

void TestEngineSoak::thousand_requests_data() {
    QTest::addColumn<int>("preemption");
    QTest::addColumn<bool>("hybrid");
    QTest::newRow("recompute") << int(PreemptionMode::Recompute) << false;
    QTest::newRow("swap") << int(PreemptionMode::Swap) << false;
    QTest::newRow("hybrid, recompute") << int(PreemptionMode::Recompute) << true;
    QTest::newRow("hybrid, swap") << int(PreemptionMode::Swap) << true;
}

void TestEngineSoak::thousand_requests() {
    QFETCH(int, preemption);
    QFETCH(bool, hybrid);
    KVSCOPE_REQUIRE_MODEL(path, "stories260K-f32.gguf");
    QTemporaryDir dir;
    const auto model = std::make_shared<const Model>(
        hybrid ? write_tiny_hybrid_model(dir.filePath("hybrid.gguf").toStdString()) : path.toStdString());
    // 192 slots; the hybrid model's six groups (one full, five of a
    // 16-token window) get three times the blocks: a 60-token prompt with
    // 40 new tokens needs 13 + 5 x 11 of them, a 180-token one never fits.
    EngineConfig c = small_config(hybrid ? 72 : 24, 8);
    c.preemption = static_cast<PreemptionMode>(preemption);
    c.swap_blocks = 12;
    c.max_num_seqs = 16;
    c.max_num_batched_tokens = 64;
    Engine engine(c, model);
    std::map<RequestId, int> finishes;
    std::set<std::pair<RequestId, std::uint32_t>> finished_samples;
    engine.set_output_callback([&](const RequestOutput& o) {
        if (o.finish) {
            QVERIFY(finished_samples.insert({o.request, o.index}).second); // finishes once
            ++finishes[o.request];
        }
    });
    std::mt19937 rng(2024);
    auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
    std::vector<RequestId> live;
    std::map<RequestId, std::uint32_t> samples;
    int added = 0;
    std::uint64_t refused = 0;
    for (int round = 0; added < 1000 || engine.has_work(); ++round) {
        for (int k = pick(0, 3); k > 0 && added < 1000; --k, ++added) {
            RequestParams p;
            p.max_new_tokens = static_cast<std::uint32_t>(pick(1, 40));
            p.n = pick(0, 9) == 0 ? 2 : 1;
            p.sampling.temperature = pick(0, 1) ? 0.8f : 0.0f;
            p.sampling.seed = static_cast<std::uint64_t>(added);
            const bool never_fits = pick(0, 24) == 0; // more than the whole pool
            std::vector<TokenId> prompt(static_cast<std::size_t>(never_fits ? 180 : pick(1, 60)), 0);
            for (TokenId& t : prompt)
                t = pick(3, hybrid ? 299 : 511);
            if (never_fits)
                p.max_new_tokens = 40;
            const Admission admitted = engine.add_request(prompt, p);
            QCOMPARE(admitted.accepted(), !never_fits); // a refusal is an answer, not an output
            if (!admitted.accepted()) {
                ++refused;
                continue;
            }
            live.push_back(admitted.id());
            samples[admitted.id()] = p.n;
        }
        if (!live.empty() && pick(0, 29) == 0)
            engine.abort(live[static_cast<std::size_t>(pick(0, static_cast<int>(live.size()) - 1))]);
        engine.step(); // must not throw
        if (round % 97 == 0)
            engine.kv().check_invariants();
        QVERIFY(round < 200000);
    }
    QVERIFY(refused > 0);
    QCOMPARE(finishes.size(), std::size_t{1000 - refused});
    for (const auto& [id, n] : samples)
        QCOMPARE(finishes[id], static_cast<int>(n));
    const auto snap = engine.snapshot();
    QCOMPARE(snap->refused_requests, refused);
    QVERIFY(snap->preemptions > 0);
    QCOMPARE(snap->pool->fragmentation.used_blocks, std::size_t{0});
    QCOMPARE(snap->pool->swap_blocks_used, 0u);
    for (const BlockInfo& b : snap->pool->blocks)
        QCOMPARE(b.ref_count, 0u);
    engine.kv().check_invariants();
    qInfo("%llu preemptions, %llu tokens generated, %llu steps", static_cast<unsigned long long>(snap->preemptions),
          static_cast<unsigned long long>(snap->generated_tokens), static_cast<unsigned long long>(snap->step));
}

QTEST_APPLESS_MAIN(TestEngineSoak)
#include "test_engine_soak.moc"
